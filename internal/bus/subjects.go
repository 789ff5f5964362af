package bus

import (
	"errors"
	"fmt"
)

// Version is the version token of every subject and bucket name. A change
// that old peers cannot read gets a new version.
const Version = "v1"

// Prefix starts every subject.
const Prefix = "relaymesh." + Version

// Subjects without parameters.
const (
	// DemandSubject carries Demand batches from redirectors to the orchestrator.
	DemandSubject = Prefix + ".demand"
	// StatusWildcard matches every relay's status subject.
	StatusWildcard = Prefix + ".relay.*.status"
	// StreamEventWildcard matches every stream event.
	StreamEventWildcard = Prefix + ".stream.*.*.event"
)

// MaxTokenLen bounds an id, app or stream name used in a subject or key.
const MaxTokenLen = 128

// ErrBadToken is returned for ids and names that cannot be a subject token.
var ErrBadToken = errors.New("bus: invalid subject token")

// ValidToken checks that s can be one subject token: 1 to MaxTokenLen bytes
// of letters, digits, '-', '_' and '=' (no dots, wildcards, spaces or
// control characters). The same tokens are valid key-value keys.
func ValidToken(s string) error {
	if s == "" || len(s) > MaxTokenLen {
		return fmt.Errorf("%w: length %d", ErrBadToken, len(s))
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '=':
		default:
			return fmt.Errorf("%w: %q has byte %q", ErrBadToken, s, c)
		}
	}
	return nil
}

// StatusSubject is where relay id publishes its Status.
func StatusSubject(id string) (string, error) {
	if err := ValidToken(id); err != nil {
		return "", err
	}
	return Prefix + ".relay." + id + ".status", nil
}

// CommandSubject is where relay id listens for Commands.
func CommandSubject(id string) (string, error) {
	if err := ValidToken(id); err != nil {
		return "", err
	}
	return Prefix + ".relay." + id + ".cmd", nil
}

// StreamEventSubject is where events of stream app/name are published.
func StreamEventSubject(app, name string) (string, error) {
	if err := ValidToken(app); err != nil {
		return "", err
	}
	if err := ValidToken(name); err != nil {
		return "", err
	}
	return Prefix + ".stream." + app + "." + name + ".event", nil
}
