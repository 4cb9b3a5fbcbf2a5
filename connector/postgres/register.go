package postgres

import (
	"context"
	"net"
	"strconv"
	"strings"

	"github.com/tributary/tributary/connector"
)

func init() {
	connector.RegisterSink(connector.SinkConnector{Name: Name, Decoupled: true,
		Parse: func(props map[string]string, _, _ string) (connector.SinkOpener, error) {
			if _, err := Parse(props, []string{"-"}); err != nil { // the key is checked when opened
				return nil, err
			}
			return opener{props}, nil
		},
		Endpoints: Endpoints})
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

// Endpoints are the hosts (host:port) a sink's options connect to: each
// of a comma-separated host list, at the port.
func Endpoints(props map[string]string) []string {
	port := strings.TrimSpace(lookup(props, optPort))
	if port == "" {
		port = strconv.Itoa(DefaultPort)
	}
	var out []string
	for _, h := range strings.Split(lookup(props, optHost), ",") {
		if h = strings.TrimSpace(h); h != "" {
			out = append(out, net.JoinHostPort(h, port))
		}
	}
	return out
}

// lookup reads option k (keys matched case-insensitively).
func lookup(props map[string]string, k string) string {
	for pk, v := range props {
		if strings.EqualFold(strings.TrimSpace(pk), k) {
			return v
		}
	}
	return ""
}
