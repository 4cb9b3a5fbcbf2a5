package kafka

import (
	"context"

	"github.com/tributary/tributary/connector"
	"github.com/twmb/franz-go/pkg/kgo"
)

func init() {
	connector.RegisterSink(connector.SinkConnector{Name: Name, Decoupled: true, Formats: true,
		Parse: func(props map[string]string, format, encode string) (connector.SinkOpener, error) {
			return sinkOpener{props, format, encode}, nil
		},
		Endpoints: Endpoints})
}

type sinkOpener struct {
	props          map[string]string
	format, encode string
}

func (o sinkOpener) Open(ctx context.Context, t connector.SinkTarget) (connector.Sink, error) {
	cfg, err := Parse(o.props, o.format, o.encode, t.Columns, t.Key)
	if err != nil {
		return nil, err
	}
	return Open(ctx, cfg, t)
}

// Check checks the topic (opening a sink does not reach the brokers) and
// opens one instance.
func (o sinkOpener) Check(ctx context.Context, t connector.SinkTarget) error {
	cfg, err := Parse(o.props, o.format, o.encode, t.Columns, t.Key)
	if err != nil {
		return err
	}
	if err := cfg.Check(ctx); err != nil {
		return err
	}
	return connector.OpenCheck(ctx, o, t)
}

// Endpoints are the bootstrap brokers the options name; the brokers they
// advertise are checked when dialled (connector.Dial).
func Endpoints(props map[string]string) []string {
	return splitBrokers(props[OptBootstrapServer])
}

// dialer makes every client dial through connector.Dial (the allow-list).
var dialer = kgo.Dialer(connector.Dial)
