package blackhole

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tributary/tributary/sql/types"
)

func TestParse(t *testing.T) {
	cfg, err := Parse(map[string]string{"connector": "blackhole", "Blackhole.Delay_Ms": " 25 "})
	if err != nil || cfg.Delay != 25*time.Millisecond {
		t.Fatalf("Parse = %+v, %v; want a 25ms delay", cfg, err)
	}
	for _, bad := range []map[string]string{
		{"blackhole.delay_ms": "-1"},
		{"blackhole.delay_ms": "soon"},
		{"blackhole.color": "black"},
	} {
		if _, err := Parse(bad); !errors.Is(err, types.ErrInvalidParameter) {
			t.Errorf("Parse(%v) = %v, want an invalid parameter error", bad, err)
		}
	}
}

func TestSinkCountsVisibleRowsAndDelaysCommits(t *testing.T) {
	s := New(Config{Delay: 20 * time.Millisecond})
	c := types.NewChunk([]types.T{types.TInt64}, 4)
	for i := 0; i < 4; i++ {
		c.AppendRow([]types.Datum{types.DInt(int64(i))})
	}
	c.Vis = []bool{true, false, true, true}
	if err := s.Write(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := s.Commit(context.Background(), 7); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Errorf("commit took %v, want at least the 20ms delay", d)
	}
	if w, c := s.Rows(); w != 3 || c != 3 {
		t.Errorf("rows written %d, committed %d; want 3, 3", w, c)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Commit(ctx, 8); !errors.Is(err, context.Canceled) {
		t.Errorf("commit with a cancelled context = %v", err)
	}
}
