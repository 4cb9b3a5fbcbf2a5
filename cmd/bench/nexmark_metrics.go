package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/tributary/tributary/connector/nexmark/queries"
)

// metricsOffArgs turn every metric off: no HTTP listener (/metrics, the
// dashboard) and no per-actor or per-operator counters.
var metricsOffArgs = []string{"--http-listen=", "--stream-stats=false"}

// nexmarkCompareMetrics runs each query rounds times with metrics on and
// as often off, alternating which goes first, and prints the medians side
// by side (issue 16's overhead check).
func nexmarkCompareMetrics(ctx context.Context, out io.Writer, e *env, serverArgs []string, qs []queries.Query, events int64, sources, sink bool, rounds int) error {
	type pair struct{ on, off []nexmarkResult }
	results := make([]pair, len(qs))
	for i, q := range qs {
		for round := 0; round < rounds; round++ {
			for k := 0; k < 2; k++ {
				on := (round+k)%2 == 0 // on/off, then off/on, ...
				args := append([]string(nil), serverArgs...)
				label := "on"
				if !on {
					args = append(args, metricsOffArgs...)
					label = "off"
				}
				dir, err := e.subdir(fmt.Sprintf("nexmark-%s-%s-%d", q.Name, label, round))
				if err != nil {
					return err
				}
				r, err := nexmarkRun(ctx, e.bin, dir, args, q, events, sources, sink, on)
				if err != nil {
					return fmt.Errorf("%s (metrics %s): %w", q.Name, label, err)
				}
				fmt.Fprintf(out, "%s metrics %s, round %d: %.0f events/s, %.2f CPU s per M events\n", q.Name, label, round+1, r.EventsPerSec, r.CPUPerM)
				if on {
					results[i].on = append(results[i].on, r)
				} else {
					results[i].off = append(results[i].off, r)
				}
			}
		}
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "query\tevents\truns\ton events/s\toff events/s\tthroughput cost\ton CPU s/M\toff CPU s/M\tCPU cost\t\n")
	for i, q := range qs {
		on, off := results[i].on, results[i].off
		onRate, offRate := medianOf(on, func(r nexmarkResult) float64 { return r.EventsPerSec }), medianOf(off, func(r nexmarkResult) float64 { return r.EventsPerSec })
		onCPU, offCPU := medianOf(on, func(r nexmarkResult) float64 { return r.CPUPerM }), medianOf(off, func(r nexmarkResult) float64 { return r.CPUPerM })
		fmt.Fprintf(tw, "%s\t%d\t%d+%d\t%.0f\t%.0f\t%+.1f%%\t%.2f\t%.2f\t%+.1f%%\t\n", q.Name, events, len(on), len(off),
			onRate, offRate, (offRate/onRate-1)*100, onCPU, offCPU, (onCPU/offCPU-1)*100)
	}
	return tw.Flush()
}

func medianOf(rs []nexmarkResult, f func(nexmarkResult) float64) float64 {
	vs := make([]float64, len(rs))
	for i, r := range rs {
		vs[i] = f(r)
	}
	sort.Float64s(vs)
	if len(vs) == 0 {
		return 0
	}
	if len(vs)%2 == 1 {
		return vs[len(vs)/2]
	}
	return (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
}

// scrapeEverySecond GETs /metrics and the dashboard's endpoints on addr
// every second until the returned stop is called; stop returns how many
// scrapes of /metrics succeeded.
func scrapeEverySecond(ctx context.Context, addr string) (stop func() int) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	ok := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		client := &http.Client{Timeout: 5 * time.Second}
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			for _, path := range []string{"/metrics", "/api/jobs", "/api/series", "/api/events"} {
				req, err := http.NewRequestWithContext(ctx, "GET", "http://"+addr+path, nil)
				if err != nil {
					continue
				}
				resp, err := client.Do(req)
				if err != nil {
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if path == "/metrics" && resp.StatusCode == http.StatusOK {
					ok++
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() int {
		cancel()
		wg.Wait()
		return ok
	}
}
