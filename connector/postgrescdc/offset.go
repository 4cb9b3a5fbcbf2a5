package postgrescdc

import (
	"strings"

	"encoding/json"
	"github.com/tributary/tributary/connector"
	"slices"

	"github.com/jackc/pglogrepl"

	"github.com/tributary/tributary/sql/types"
)

// Offset is the split's offset (its opaque bytes are this, as JSON): where
// the copy and the change stream stand after the rows read so far.
type Offset struct {
	// Copied: every upstream row has been copied; the stream alone goes on.
	Copied bool `json:"copied,omitempty"`
	// PK is the last copied row's primary key, in the upstream's text
	// forms, in key order (nil: nothing copied yet).
	PK []string `json:"pk,omitempty"`
	// Rows counts the rows copied.
	Rows int64 `json:"rows"`
	// Estimate is the upstream's row estimate (pg_class.reltuples) when
	// the copy began (0: unknown), kept so that the share copied, Rows
	// over it, never goes down across restarts.
	Estimate int64 `json:"est,omitempty"`
	// Win is set while a chunk is copied (from its select until all its
	// rows are queued): changes to keys above PK up to Win (any key with
	// WinAll) may be in the table already, so a copy that resumes here
	// writes the rows up to it with a lookup, not as fresh inserts.
	Win    []string `json:"win,omitempty"`
	WinAll bool     `json:"win_all,omitempty"`
	// LSN: every change committed upstream at or below it is in the table,
	// for keys at or below PK (all keys once Copied); the stream resumes
	// after it.
	LSN uint64 `json:"lsn"`
	// Splits are a parallel copy's key ranges (backfill.parallelism > 1),
	// fixed when the copy began and kept to its end: each has its own
	// position, rows and finished flag (PK and Win above are then unused;
	// Rows is their sum, Copied that all are). A change applies to a key
	// when the key's range has copied past it.
	Splits []SplitState `json:"splits,omitempty"`
}

// SplitState is one key range of a parallel copy: the keys whose first
// column k is Lo < k <= Hi (nil Lo: from the first key; nil Hi: to the
// last), in the upstream's text forms. PK, Rows, Copied, Win and WinAll
// are as in Offset, for the range; LSNLow is the stream's position when the
// range's copy began and LSNHigh when it ended (RisingWave's
// cdc_offset_low and cdc_offset_high).
type SplitState struct {
	ID      int      `json:"id"`
	Lo      *string  `json:"lo,omitempty"`
	Hi      *string  `json:"hi,omitempty"`
	PK      []string `json:"pk,omitempty"`
	Rows    int64    `json:"rows"`
	Copied  bool     `json:"copied,omitempty"`
	Win     []string `json:"win,omitempty"`
	WinAll  bool     `json:"win_all,omitempty"`
	LSNLow  uint64   `json:"lsn_low,omitempty"`
	LSNHigh uint64   `json:"lsn_high,omitempty"`
}

// withSplit returns o with split i changed by fn; the Splits slice is
// copied (offsets already queued share the old one).
func (o Offset) withSplit(i int, fn func(*SplitState)) Offset {
	o.Splits = slices.Clone(o.Splits)
	fn(&o.Splits[i])
	return o
}

// splitCounts are RisingWave's rw_cdc_progress counts: the ranges, those
// copied, and those copied whose stream has passed the copy's end (all of
// them here: the stream applies each range's changes as it goes). A table
// copied as one range counts as one split.
func (o Offset) splitCounts() (total, copied, completed int) {
	if len(o.Splits) == 0 {
		if o.Copied {
			return 1, 1, 1
		}
		return 1, 0, 0
	}
	for _, s := range o.Splits {
		if s.Copied {
			copied++
			if s.LSNHigh <= o.LSN {
				completed++
			}
		}
	}
	return len(o.Splits), copied, completed
}

// fromSlot reports that o has copied rows but no LSN yet (a crash after
// its first chunk and before any commit the stream read): the changes it
// needs start at the slot's confirmed LSN, which waits while any split's
// committed LSN is 0. An offset that copied nothing needs no change from
// before it joins (its copy's selects see them).
func (o Offset) fromSlot() bool {
	if o.LSN != 0 {
		return false
	}
	if o.Rows > 0 || o.PK != nil || o.Win != nil || o.WinAll {
		return true
	}
	for _, s := range o.Splits {
		if s.Rows > 0 || s.PK != nil || s.Win != nil || s.WinAll {
			return true
		}
	}
	return false
}

// EncodeOffset returns o's bytes.
func EncodeOffset(o Offset) []byte {
	b, _ := json.Marshal(o) // strings, numbers and bools: cannot fail
	return b
}

// DecodeOffset reads bytes made by EncodeOffset (nil: the start).
func DecodeOffset(b []byte) (Offset, error) {
	var o Offset
	if len(b) == 0 {
		return o, nil
	}
	if err := json.Unmarshal(b, &o); err != nil {
		return o, types.Errorf(types.ErrInvalidParameter, "postgres-cdc: a malformed offset %q: %v", b, err)
	}
	return o, nil
}

// LSNString is the LSN in PostgreSQL's form (0/16B3748).
func (o Offset) LSNString() string { return pglogrepl.LSN(o.LSN).String() }

func (o Offset) equal(p Offset) bool {
	return string(EncodeOffset(o)) == string(EncodeOffset(p))
}

// ranges are the copy's ranges for rw_cdc_splits.
func (o Offset) ranges() []connector.CDCRange {
	if len(o.Splits) == 0 {
		return []connector.CDCRange{{LoOpen: true, HiOpen: true, PK: strings.Join(o.PK, ", "), Finished: o.Copied, Rows: o.Rows}}
	}
	lsn := func(l uint64) string {
		if l == 0 {
			return ""
		}
		return pglogrepl.LSN(l).String()
	}
	out := make([]connector.CDCRange, len(o.Splits))
	for i, s := range o.Splits {
		r := connector.CDCRange{ID: s.ID, LoOpen: s.Lo == nil, HiOpen: s.Hi == nil, PK: strings.Join(s.PK, ", "), Finished: s.Copied,
			Rows: s.Rows, LSNLow: lsn(s.LSNLow), LSNHigh: lsn(s.LSNHigh)}
		if s.Lo != nil {
			r.Lo = *s.Lo
		}
		if s.Hi != nil {
			r.Hi = *s.Hi
		}
		out[i] = r
	}
	return out
}

// publishProgress tells the engine (rw_cdc_progress) where relation's split stands.
func publishProgress(env connector.ReaderEnv, relation, split string, o Offset) {
	if env.CDC == nil {
		return
	}
	est := o.Estimate
	if est <= 0 {
		est = -1
	}
	total, copied, completed := o.splitCounts()
	pk := o.PK
	if len(o.Splits) == 1 {
		pk = o.Splits[0].PK // a range split's position
	}
	env.CDC(connector.CDCProgress{Relation: relation, Split: split, PK: strings.Join(pk, ", "),
		Finished: o.Copied, Rows: o.Rows, Estimate: est, LSN: o.LSNString(),
		SplitTotal: total, SplitBackfilled: copied, SplitCompleted: completed, Ranges: o.ranges()})
}
