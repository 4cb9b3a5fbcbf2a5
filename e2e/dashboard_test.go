package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tributary/tributary/e2e/e2etest"
	"github.com/tributary/tributary/e2e/testserver"
)

// findBrowser returns the path of a Chromium or Chrome binary, or "".
// TRIBUTARY_CHROME names one explicitly.
func findBrowser() string {
	if p := os.Getenv("TRIBUTARY_CHROME"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// dashboardView is what the test reads off the page.
type dashboardView struct {
	Jobs []struct {
		Name     string `json:"name"`
		State    string `json:"state"`
		Progress string `json:"progress"`
	} `json:"jobs"`
	Title     string         `json:"title"`
	Fragments []string       `json:"fragments"`
	Edges     []string       `json:"edges"`
	Events    []string       `json:"events"`
	Charts    map[string]int `json:"charts"`
	Refreshed int            `json:"refreshed"`
}

const readDashboard = `(() => ({
	jobs: [...document.querySelectorAll('#jobs tbody tr')].map(r => ({
		name: r.dataset.jobName,
		state: r.querySelector('.state').textContent,
		progress: r.querySelector('.progress-text').textContent,
	})),
	title: document.getElementById('graph-title').textContent,
	fragments: [...document.querySelectorAll('#graph g.fragment')].map(g => g.textContent),
	edges: [...document.querySelectorAll('#graph g.edge .edge-rate')].map(e => e.textContent),
	events: [...document.querySelectorAll('#events tbody tr')].map(r => r.textContent),
	charts: Object.fromEntries([...document.querySelectorAll('canvas')].map(c => [c.id, Number(c.dataset.lines || 0)])),
	refreshed: Number(document.body.dataset.refreshed || 0),
}))()`

// TestDashboardBrowser is issue 16's dashboard check in a real headless
// Chromium (Debian's chromium package; skipped where none is installed):
// the page loads without console errors or exceptions, lists the jobs the
// test created with their state and backfill progress (a paused background
// backfill at 0%), and draws the fragment graph of a running job with a
// live rate on an edge. TRIBUTARY_DASHBOARD_SCREENSHOT=path saves a
// screenshot (docs/dashboard.png is one).
func TestDashboardBrowser(t *testing.T) {
	browser := findBrowser()
	if browser == "" {
		t.Skip("no Chromium found (apt-get install chromium, or set TRIBUTARY_CHROME): the dashboard's browser test is skipped")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv := testserver.StartWith(t, testserver.Build(t), t.TempDir(), testserver.Options{Args: []string{"--barrier-interval-ms", "100"}})
	conn := e2etest.Connect(t, ctx, srv)
	for _, sql := range []string{
		`CREATE TABLE t (k int PRIMARY KEY, v int)`,
		`INSERT INTO t SELECT g, g % 10 FROM generate_series(1, 5000) g`,
		`CREATE TABLE g (id bigint PRIMARY KEY, v int) WITH (connector = 'datagen',
			fields.id.kind = 'sequence', fields.id.start = '1', fields.id.end = '100000000',
			fields.v.min = '0', fields.v.max = '9', datagen.rows.per.second = '2000', datagen.split.num = '2')`,
		`CREATE MATERIALIZED VIEW live AS SELECT v, count(*) AS n FROM g GROUP BY v`,
		`CREATE MATERIALIZED VIEW ratio AS SELECT id, 10 / v AS q FROM g`, // division by zero: EXPR_ERROR events
		`SET sink_decouple = true`,
		`SET sink_rate_limit = 500`, // behind g's 2000 rows/s: the sink lag chart rises
		`CREATE SINK slow FROM ratio WITH (connector = 'blackhole')`,
		`SET background_ddl = true`,
		`SET backfill_rate_limit = 0`,
		`CREATE MATERIALIZED VIEW paused AS SELECT v, count(*) AS n FROM t GROUP BY v`,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}

	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, chromedp.ExecPath(browser), chromedp.Headless,
		chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.WindowSize(1400, 1250))
	defer cancelAlloc()
	tab, cancelTab := chromedp.NewContext(allocCtx)
	defer cancelTab()
	if err := chromedp.Do(tab); err != nil { // starts the browser
		t.Fatalf("start %s: %v", browser, err)
	}
	// Every console message, exception and browser log entry, read until
	// the tab closes.
	var mu sync.Mutex
	var problems []string
	consoleCtx, stopConsole := context.WithCancel(tab)
	messages := chromedp.Console(consoleCtx)
	consoleDone := make(chan struct{})
	go func() {
		defer close(consoleDone)
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				mu.Lock()
				problems = append(problems, m.String()+" at "+m.URL)
				mu.Unlock()
			}
		}
	}()
	defer func() { stopConsole(); <-consoleDone }()

	if err := chromedp.Do(tab, chromedp.Navigate("http://"+srv.HTTPAddr+"/")); err != nil {
		t.Fatalf("open the dashboard: %v", err)
	}
	read := func() dashboardView {
		t.Helper()
		v, err := chromedp.Run(tab, chromedp.Evaluate[dashboardView](readDashboard))
		if err != nil {
			t.Fatalf("read the page: %v", err)
		}
		return v
	}
	jobState := func(v dashboardView, name string) (state, progress string) {
		for _, j := range v.Jobs {
			if j.Name == name {
				return j.State, j.Progress
			}
		}
		return "", ""
	}

	// The jobs, with their state and progress.
	var v dashboardView
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		v = read()
		liveState, _ := jobState(v, "public.live")
		pausedState, pausedProgress := jobState(v, "public.paused")
		if liveState == "RUNNING" && pausedState == "BACKFILLING" && strings.HasPrefix(pausedProgress, "0.0%") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the jobs table never showed live RUNNING and paused BACKFILLING at 0%%: %+v", v.Jobs)
		}
	}
	if len(v.Jobs) < 5 { // g (a connector table's job), live, ratio, slow, paused
		t.Errorf("jobs shown: %+v", v.Jobs)
	}

	// The fragment graph of live, with rows moving on an edge.
	if _, err := chromedp.Run(tab, chromedp.Evaluate[bool](`(() => { document.querySelector('tr[data-job-name="public.live"]').click(); return true })()`)); err != nil {
		t.Fatalf("select job live: %v", err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		v = read()
		moving := false
		for _, e := range v.Edges {
			moving = moving || !strings.HasPrefix(e, "0 rows/s") && !strings.HasPrefix(e, "–")
		}
		if strings.Contains(v.Title, "public.live") && len(v.Fragments) >= 2 && moving && len(v.Events) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no fragment graph of live with a moving edge and no event (title %q, fragments %q, edges %q, events %d)",
				v.Title, v.Fragments, v.Edges, len(v.Events))
		}
	}
	if !strings.Contains(strings.Join(v.Fragments, "|"), "parallelism") {
		t.Errorf("fragments without their parallelism: %q", v.Fragments)
	}
	if !strings.Contains(strings.Join(v.Events, "|"), "EXPR_ERROR") {
		t.Errorf("the event log lacks ratio's division by zero: %q", v.Events)
	}
	// A few more refreshes, so the charts draw with data, then the picture.
	for start := v.Refreshed; v.Refreshed < start+3; time.Sleep(200 * time.Millisecond) {
		v = read()
	}
	// The charts drew the series there is data for: barriers, each job's
	// throughput and the rate-limited sink's lag.
	for id, min := range map[string]int{"chart-barrier": 2, "chart-throughput": 5, "chart-sink-lag": 1} {
		if v.Charts[id] < min {
			t.Errorf("chart %s drew %d series, want at least %d (charts: %v)", id, v.Charts[id], min, v.Charts)
		}
	}
	png, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Errorf("the screenshot is not a PNG")
	}
	if path := os.Getenv("TRIBUTARY_DASHBOARD_SCREENSHOT"); path != "" {
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, p := range problems {
		t.Errorf("browser console: %s", p)
	}
}
