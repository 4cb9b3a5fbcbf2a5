package coordinator

import (
	"errors"

	"github.com/tributary/tributary/executor/stream"
)

// root is a barrier entry point: a table's DML source (chunks and barriers on
// one channel) or a constant source (barriers only).
type root struct {
	msgs     chan stream.Message
	barriers chan *stream.Barrier
}

var errActorFailed = errors.New("an actor failed")

func (r *root) sendBarrier(b *stream.Barrier, stop, failed <-chan struct{}) error {
	if r.msgs != nil {
		select {
		case r.msgs <- stream.BarrierMsg(b):
			return nil
		case <-stop:
			return ErrStopped
		case <-failed:
			return errActorFailed
		}
	}
	select {
	case r.barriers <- b:
		return nil
	case <-stop:
		return ErrStopped
	case <-failed:
		return errActorFailed
	}
}
