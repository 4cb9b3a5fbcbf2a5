package memory

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{
		"65536": 65536, "2GB": 2 << 30, "2gb": 2 << 30, "512MiB": 512 << 20, "64MB": 64 << 20,
		"1.5 GiB": 3 << 29, "10kB": 10 << 10, "3 KiB": 3 << 10, "1TB": 1 << 40, "7B": 7, "0": 0,
	} {
		got, err := ParseBytes(in)
		if err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "GB", "2XB", "-1GB", "1..5MB", "1e3", "99999999TB"} {
		if got, err := ParseBytes(in); !errors.Is(err, ErrBadSize) {
			t.Errorf("ParseBytes(%q) = %d, %v; want ErrBadSize", in, got, err)
		}
	}
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{2 << 30: "2GB", 3072: "3kB", 1000: "1000B", 0: "0B", 1536 << 20: "1536MB"} {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
		if back, err := ParseBytes(FormatBytes(n)); err != nil || back != n {
			t.Errorf("ParseBytes(FormatBytes(%d)) = %d, %v", n, back, err)
		}
	}
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCgroupLimit(t *testing.T) {
	dir := t.TempDir()
	// v1: the process's cgroup has no limit, its parent has 3 GiB; the
	// root reports v1's "unlimited".
	self := filepath.Join(dir, "self-v1")
	write(t, self, "9:name=systemd:/\n4:memory:/jobs/one\n0::/\n")
	write(t, filepath.Join(dir, "cg/memory/memory.limit_in_bytes"), "9223372036854771712\n")
	write(t, filepath.Join(dir, "cg/memory/jobs/memory.limit_in_bytes"), "3221225472\n")
	write(t, filepath.Join(dir, "cg/memory/jobs/one/memory.limit_in_bytes"), "9223372036854771712\n")
	if got := cgroupLimit(self, filepath.Join(dir, "cg")); got != 3<<30 {
		t.Errorf("v1 limit = %d, want %d", got, 3<<30)
	}
	// v2: memory.max of the cgroup ("max" above it).
	self2 := filepath.Join(dir, "self-v2")
	write(t, self2, "0::/app\n")
	write(t, filepath.Join(dir, "cg2/memory.max"), "max\n")
	write(t, filepath.Join(dir, "cg2/app/memory.max"), "1073741824\n")
	if got := cgroupLimit(self2, filepath.Join(dir, "cg2")); got != 1<<30 {
		t.Errorf("v2 limit = %d, want %d", got, 1<<30)
	}
	if got := cgroupLimit(filepath.Join(dir, "missing"), dir); got != 0 {
		t.Errorf("no cgroup file: %d, want 0", got)
	}
}

func TestMeminfo(t *testing.T) {
	p := filepath.Join(t.TempDir(), "meminfo")
	write(t, p, "MemTotal:       24683652 kB\nMemFree:        13764664 kB\n")
	if got := meminfoTotal(p); got != 24683652<<10 {
		t.Errorf("MemTotal = %d", got)
	}
	if ram, src := SystemRAM(); ram <= 0 || src == "" {
		t.Errorf("SystemRAM() = %d, %q", ram, src)
	}
}

func TestPoolAllowance(t *testing.T) {
	p := NewPool(1000)
	a, b := p.Open(Label{Name: "a"}), p.Open(Label{Name: "b"})
	// One busy account may take what the other leaves.
	b.Set(100)
	if got := a.Allowance(); got != 900 {
		t.Errorf("allowance with b at 100 = %d, want 900", got)
	}
	// Both over: each is held to its fair share.
	a.Set(900)
	b.Set(600)
	if got, want := a.Allowance(), int64(500); got != want {
		t.Errorf("a's allowance over budget = %d, want %d", got, want)
	}
	if p.Used() != 1500 {
		t.Errorf("used = %d, want 1500", p.Used())
	}
	// Shrinking the budget shrinks the allowances.
	p.SetScale(0.5)
	if got := a.Allowance(); got != 250 {
		t.Errorf("a's allowance at scale 0.5 = %d, want 250", got)
	}
	if n := len(p.Accounts()); n != 2 {
		t.Errorf("%d accounts listed, want 2", n)
	}
	b.Close()
	b.Close()
	b.Set(77) // ignored once closed
	if p.Used() != 900 || len(p.Accounts()) != 1 {
		t.Errorf("after close: used %d, %d accounts", p.Used(), len(p.Accounts()))
	}
	a.Close()
	var none *Pool
	if acc := none.Open(Label{}); acc != nil || acc.Allowance() <= 1<<60 {
		t.Errorf("a nil pool's account limits: %v", acc)
	}
}

func TestBudgetPressure(t *testing.T) {
	b := NewBudget(1000)
	p := NewPool(400)
	var scales []float64
	b.OnPressure(func(s float64) { scales = append(scales, s); p.SetScale(s) })
	b.AddPool("stream_caches", p)
	b.Add("fixed", func() int64 { return 10 }, func() int64 { return 5 })
	if s := b.Check(600); s != 1 {
		t.Errorf("scale at 60%% = %v, want 1", s)
	}
	b.Check(800)
	b.Check(900)
	if s := b.Scale(); s != 0.25 || p.Budget() != 100 {
		t.Errorf("after two checks over 75%%: scale %v, pool budget %d", s, p.Budget())
	}
	for range 20 {
		b.Check(999)
	}
	if s := b.Scale(); s != minScale {
		t.Errorf("scale floor = %v, want %v", s, minScale)
	}
	for range 10 {
		b.Check(100)
	}
	if s := b.Scale(); s != 1 || p.Budget() != 400 {
		t.Errorf("after the pressure went: scale %v, pool budget %d", s, p.Budget())
	}
	u := b.Usage()
	if len(u) != 2 || u[0].Name != "fixed" || u[0].Budget != 10 || u[1].Name != "stream_caches" || u[1].Budget != 400 {
		t.Errorf("usage = %+v", u)
	}
	if len(scales) == 0 {
		t.Error("OnPressure never called")
	}
}

// TestPoolConcurrent: owners setting and closing their accounts while
// others list the pool and read allowances leave the pool empty.
func TestPoolConcurrent(t *testing.T) {
	p := NewPool(1 << 20)
	done := make(chan struct{})
	listed := make(chan struct{})
	go func() {
		defer close(listed)
		for {
			select {
			case <-done:
				return
			default:
				for _, u := range p.Accounts() {
					if u.Used < 0 || u.Budget <= 0 {
						t.Errorf("listed %+v", u)
					}
				}
			}
		}
	}()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				a := p.Open(Label{Name: "w", Actor: uint32(w)})
				for j := range 10 {
					a.Set(int64(i*j) % 5000)
					_ = a.Allowance()
				}
				a.Close()
			}
		}()
	}
	wg.Wait()
	close(done)
	<-listed
	if p.Used() != 0 || len(p.Accounts()) != 0 {
		t.Errorf("pool after every account closed: %d bytes, %d accounts", p.Used(), len(p.Accounts()))
	}
}

// TestBudgetHold: Watch calls a held consumer's trim with its budget every interval, and
// rw_memory's lines list it with that budget.
func TestBudgetHold(t *testing.T) {
	b := NewBudget(1000)
	var mu sync.Mutex
	used, calls := int64(300), 0
	b.Hold("mapped", 100, func() int64 { mu.Lock(); defer mu.Unlock(); return used }, func(budget int64) (int64, int64, error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		before := used
		if used > budget {
			used = budget / 2
		}
		return before, used, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); b.Watch(ctx, time.Millisecond, nil) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n, u := calls, used
		mu.Unlock()
		if n >= 2 {
			if u != 50 {
				t.Errorf("after %d trims the consumer holds %d, want 50", n, u)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("trim called %d times in 10 s", n)
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	if u := b.Usage(); len(u) != 1 || u[0].Name != "mapped" || u[0].Budget != 100 || u[0].Used != 50 {
		t.Errorf("usage = %+v", u)
	}
}

// TestSplit: the Go heap's limit and the mapped tables' share make up the budget, and the shares
// given out leave room for what is not accounted for.
func TestSplit(t *testing.T) {
	s := Split(8 << 30)
	if s.Go()+s.MappedTables != s.Limit || s.MappedTables <= 0 || s.Storage+s.StreamCaches+s.MappedTables >= s.Limit {
		t.Errorf("Split(8 GiB) = %+v", s)
	}
}
