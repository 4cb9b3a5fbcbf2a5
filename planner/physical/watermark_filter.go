package physical

import (
	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
)

// watermarkFilter puts the watermark generator of rel's WATERMARK FOR
// clause (if any) over in, a scan of rel.
func watermarkFilter(in plan.StreamNode, rel *catalog.Relation) (plan.StreamNode, error) {
	if rel.Watermark == nil {
		return in, nil
	}
	col := -1
	for i, f := range in.Schema() {
		if f.Name == rel.Watermark.Column && !f.Hidden {
			col = i
			break
		}
	}
	if col < 0 {
		return nil, types.Errorf(types.ErrInternal, "%s: the watermark column %q is not scanned", rel.QualifiedName(), rel.Watermark.Column)
	}
	delay, err := rel.Watermark.DelayInterval()
	if err != nil {
		return nil, err
	}
	return &plan.StreamWatermarkFilter{Input: in, Col: col, Delay: delay}, nil
}
