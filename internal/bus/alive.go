package bus

import "time"

// AliveWildcard matches every relay's heartbeat subject.
const AliveWildcard = Prefix + ".relay.*.alive"

// DefaultAliveInterval is how often a relay sends its heartbeat, and
// DefaultAliveTimeout how long a redirector waits without one before it
// stops naming the relay: three missed beats, so that with the redirector's
// check (a tenth of the timeout) and a reconnecting player's retry a dead
// relay is out of rotation well within the 3 s allowed.
const (
	DefaultAliveInterval = 500 * time.Millisecond
	DefaultAliveTimeout  = 1500 * time.Millisecond
)

// Alive is a relay's heartbeat on AliveSubject: a few dozen bytes every
// AliveInterval, apart from the status, so that a relay's death is seen in
// seconds without sending whole statuses that often (1,000 relays: 2,000
// messages/s of about 120 bytes on the wire). Draining is sent at once when
// the relay starts draining; Bye is its goodbye when it stops on purpose.
type Alive struct {
	ID       string    `json:"id"`
	Draining bool      `json:"draining,omitempty"`
	Bye      bool      `json:"bye,omitempty"`
	Time     time.Time `json:"time"`
}

// AliveSubject is where relay id sends its heartbeat.
func AliveSubject(id string) (string, error) {
	if err := ValidToken(id); err != nil {
		return "", err
	}
	return Prefix + ".relay." + id + ".alive", nil
}

// DecodeAlive decodes and validates an Alive.
func DecodeAlive(data []byte) (Alive, error) {
	var a Alive
	if len(data) > 1024 {
		return Alive{}, invalid("heartbeat of %d bytes", len(data))
	}
	if err := decode(data, &a); err != nil {
		return Alive{}, err
	}
	if err := ValidToken(a.ID); err != nil {
		return Alive{}, invalid("id: %v", err)
	}
	return a, nil
}
