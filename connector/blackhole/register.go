package blackhole

import (
	"context"

	"github.com/tributary/tributary/connector"
)

func init() {
	connector.RegisterSink(connector.SinkConnector{Name: Name,
		Parse: func(props map[string]string, _, _ string) (connector.SinkOpener, error) {
			cfg, err := Parse(props)
			if err != nil {
				return nil, err
			}
			return opener{cfg}, nil
		}})
}

type opener struct{ cfg Config }

func (o opener) Open(context.Context, connector.SinkTarget) (connector.Sink, error) {
	return New(o.cfg), nil
}
func (o opener) Check(context.Context, connector.SinkTarget) error { return nil }
