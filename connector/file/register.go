package file

import (
	"context"

	"github.com/tributary/tributary/connector"
)

func init() {
	connector.RegisterSink(connector.SinkConnector{Name: Name, Decoupled: true,
		Parse: func(props map[string]string, _, _ string) (connector.SinkOpener, error) {
			cfg, err := Parse(props)
			if err != nil {
				return nil, err
			}
			return opener{cfg}, nil
		}})
}

type opener struct{ cfg Config }

func (o opener) Open(_ context.Context, t connector.SinkTarget) (connector.Sink, error) {
	return Open(o.cfg, t)
}

func (o opener) Check(ctx context.Context, t connector.SinkTarget) error {
	return connector.OpenCheck(ctx, o, t)
}
