package physical

import (
	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/planner/plan"
)

// Sink wraps sq.Root for the sink rel: an exchange hashing by the stream key
// (one actor when there is none), then StreamSink.
func Sink(sq *StreamQuery, rel *catalog.Relation, props map[string]string, appendOnly, decouple bool) *plan.StreamSink {
	in := exchange(sq.Root, plan.DistHash, sq.PK)
	return &plan.StreamSink{Input: in, Relation: rel, Props: props, AppendOnly: appendOnly, Decouple: decouple, RateLimit: -1}
}
