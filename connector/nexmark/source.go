package nexmark

import (
	"github.com/tributary/tributary/connector"
	"github.com/tributary/tributary/sql/types"
)

func init() {
	connector.RegisterSource(connector.SourceConnector{Name: Name, Parse: parseSource})
}

// parseSource is the nexmark source connector's options parser.
func parseSource(spec connector.SourceSpec) (connector.Source, error) {
	if spec.Format != "" {
		return nil, types.Errorf(types.ErrUnsupported, "FORMAT ... ENCODE is not supported by the nexmark connector")
	}
	cols := make([]Column, len(spec.Columns))
	for i, c := range spec.Columns {
		cols[i] = Column{Name: c.Name, Type: c.Type, RowIndex: c.Meta == connector.MetaRowID}
	}
	cfg, err := Parse(spec.Props, cols)
	if err != nil {
		return nil, err
	}
	return &connector.GeneratorSource{Gen: gen{cfg}, Rate: cfg.RowsPerSecond(), Total: cfg.Total(), Chunk: cfg.MaxChunk}, nil
}

type gen struct{ *Config }

func (g gen) SplitCount() int { return g.Splits }
