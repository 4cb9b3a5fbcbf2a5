package postgres

import (
	"context"

	"github.com/tributary/tributary/connector"
)

func init() {
	connector.RegisterSink(connector.SinkConnector{Name: Name, Decoupled: true,
		Parse: func(props map[string]string, _, _ string) (connector.SinkOpener, error) {
			if _, err := Parse(props, []string{"-"}); err != nil { // the key is checked when opened
				return nil, err
			}
			return opener{props}, nil
		}})
}

type opener struct{ props map[string]string }

func (o opener) Open(ctx context.Context, t connector.SinkTarget) (connector.Sink, error) {
	cfg, err := Parse(o.props, t.Key)
	if err != nil {
		return nil, err
	}
	cols := make([]Column, len(t.Columns))
	for i, c := range t.Columns {
		cols[i] = Column{Name: c.Name, Type: c.Type}
	}
	return Open(ctx, cfg, cols)
}

func (o opener) Check(ctx context.Context, t connector.SinkTarget) error {
	return connector.OpenCheck(ctx, o, t)
}
