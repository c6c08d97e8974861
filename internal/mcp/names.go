package mcp

import "errors"

// Names lists the servers the pool reaches, sorted (for messages that tell
// a caller which names it may use).
func (p *Pool) Names() []string { return p.servers.Names() }

// ErrCredentials is wrapped by a server's refusal of the worker's
// credentials (HTTP 401 or 403): the operator fixes it, so callers wait.
var ErrCredentials = errors.New("credentials refused")

// WaitedOut reports whether a caller should wait err out rather than hand
// it to the model: an outage, refused credentials (the operator's to fix),
// or a pool closing with its worker (another worker takes the call).
func WaitedOut(err error) bool {
	return IsOutage(err) || errors.Is(err, ErrCredentials) || errors.Is(err, errPoolClosed)
}

// IsBound reports whether err is a server's answer over one of the bounds
// (bounds.go): no retry fixes it.
func IsBound(err error) bool {
	var b *boundError
	return errors.As(err, &b)
}
