package bus

import (
	"context"
	"sync/atomic"

	"github.com/nats-io/nats.go"
)

// DefaultQueue is the default bound of a Publisher's queue.
const DefaultQueue = 1024

type outMsg struct {
	subject string
	data    []byte
}

// Publisher publishes core NATS messages from a bounded queue on its own
// goroutine, so callers never wait for the bus: when the queue is full the
// message is dropped and counted.
type Publisher struct {
	nc      *nats.Conn
	q       chan outMsg
	dropped atomic.Uint64
}

// NewPublisher returns a publisher with a queue of n messages (n ≤ 0: DefaultQueue).
// Call Run to start it.
func NewPublisher(nc *nats.Conn, n int) *Publisher {
	if n <= 0 {
		n = DefaultQueue
	}
	return &Publisher{nc: nc, q: make(chan outMsg, n)}
}

// Publish queues data for subject; false when the queue is full (dropped).
func (p *Publisher) Publish(subject string, data []byte) bool {
	select {
	case p.q <- outMsg{subject, data}:
		return true
	default:
		p.dropped.Add(1)
		return false
	}
}

// Dropped counts messages dropped on a full queue or refused by the client.
func (p *Publisher) Dropped() uint64 { return p.dropped.Load() }

// Run publishes queued messages until ctx ends.
func (p *Publisher) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-p.q:
			if err := p.nc.Publish(m.subject, m.data); err != nil {
				p.dropped.Add(1)
			}
		}
	}
}
