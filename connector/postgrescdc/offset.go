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
	return o.Copied == p.Copied && o.Rows == p.Rows && o.LSN == p.LSN && o.Estimate == p.Estimate && slices.Equal(o.PK, p.PK) &&
		o.WinAll == p.WinAll && slices.Equal(o.Win, p.Win)
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
	env.CDC(connector.CDCProgress{Relation: relation, Split: split, PK: strings.Join(o.PK, ", "),
		Finished: o.Copied, Rows: o.Rows, Estimate: est, LSN: o.LSNString()})
}
