package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Pool holds one client session per server, connected on first use and
// reconnected after the session breaks. Safe for concurrent use.
type Pool struct {
	servers Servers
	client  *sdk.Client
	stderr  StderrLog // where stdio servers' stderr goes

	mu      sync.Mutex
	entries map[string]*entry
	closed  bool
}

// entry is one server's session, nil until first used or after it broke.
type entry struct {
	server Server
	hc     *http.Client
	lock   chan struct{} // held while connecting, so concurrent first uses connect once

	mu      sync.Mutex
	session *sdk.ClientSession
	closed  bool // the pool closed: a session connected now is closed at once
}

// errPoolClosed is a call after Close.
var errPoolClosed = errors.New("MCP pool closed: the worker is shutting down")

// NewPool returns a pool over servers; hc nil is a default client. Each
// server's requests carry its configured headers.
func NewPool(servers Servers, hc *http.Client) *Pool {
	if hc == nil {
		hc = &http.Client{}
	}
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	p := &Pool{
		servers: servers,
		client:  sdk.NewClient(&sdk.Implementation{Name: "agenttask", Version: "1"}, nil),
		stderr:  stderrToWorker,
		entries: make(map[string]*entry, len(servers)),
	}
	for name, srv := range servers {
		c := *hc
		c.Transport = &transport{base: base, header: srv.Header, origin: origin(srv.URL)}
		p.entries[name] = &entry{server: srv, hc: &c, lock: make(chan struct{}, 1)}
	}
	return p
}

// LogStderrTo sends the stdio servers' stderr lines to log instead of the
// worker's stderr. Call it before the first use.
func (p *Pool) LogStderrTo(log StderrLog) *Pool {
	p.stderr = log
	return p
}

// Has reports whether the pool lists server.
func (p *Pool) Has(server string) bool {
	_, ok := p.servers[server]
	return ok
}

// Close ends every session; later calls fail.
func (p *Pool) Close() error {
	p.mu.Lock()
	p.closed = true
	entries := p.entries
	p.mu.Unlock()
	var errs []error
	for _, e := range entries {
		e.mu.Lock()
		cs := e.session
		e.session = nil
		e.closed = true
		e.mu.Unlock()
		if cs != nil {
			if err := cs.Close(); err != nil {
				errs = append(errs, fmt.Errorf("closing MCP session with %q: %w", e.server.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// origin is rawURL's scheme://host, "" when it does not parse.
func origin(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

func (p *Pool) entry(server string) (*entry, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errPoolClosed
	}
	e, ok := p.entries[server]
	if !ok {
		return nil, fmt.Errorf("%w: %q; the servers it lists are %q; ask the operator to add it, or name one of those", ErrUnknownServer, server, p.servers.Names())
	}
	return e, nil
}

// do runs op on server's session. A session the server no longer knows
// (it restarted) is replaced and op sent once more: the server never ran
// it. So is an idempotent op that failed on a kept-alive connection, as
// net/http does for idempotent requests; a tool call there may have run,
// so it is an outage for the caller's retry policy to decide. Any other
// failure but a protocol error drops the session, so the next use
// connects afresh.
func (p *Pool) do(ctx context.Context, server string, idempotent bool, op func(context.Context, *sdk.ClientSession) error) error {
	e, err := p.entry(server)
	if err != nil {
		return err
	}
	octx, obs, cancel := observe(ctx)
	defer cancel()
	for attempt := 0; ; attempt++ {
		var cs *sdk.ClientSession
		cs, err = e.connect(octx, p.client, p.stderr)
		if err == nil {
			err = op(octx, cs)
			if err == nil {
				return nil
			}
			var bound *boundError
			if errors.As(err, &bound) {
				return err
			}
			// The caller's own cancellation says nothing of the session:
			// dropping it would stop a stdio server other calls share.
			if !serverRPCError(err) && octx.Err() == nil {
				e.drop(cs)
			}
		}
		if seen := obs.snapshot(); attempt == 0 && ctx.Err() == nil && (seen.sessionGone || seen.staleConn && idempotent) {
			obs.reset()
			continue
		}
		return classify(ctx, server, err, obs)
	}
}

// connect returns the entry's session, connecting it when there is none.
func (e *entry) connect(ctx context.Context, client *sdk.Client, stderr StderrLog) (*sdk.ClientSession, error) {
	if cs := e.current(); cs != nil {
		return cs, nil
	}
	select {
	case e.lock <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-e.lock }()
	if cs := e.current(); cs != nil {
		return cs, nil // another caller connected while this one waited
	}
	var t sdk.Transport = &sdk.StreamableClientTransport{
		Endpoint:   e.server.URL,
		HTTPClient: e.hc,
		// Temporal retries the activity; the SDK's own retries would
		// only hide an outage for longer.
		MaxRetries: -1,
		// Nothing here listens for server-initiated messages; a hanging
		// GET per server would only hold a connection.
		DisableStandaloneSSE: true,
		MaxEventSize:         maxResponseBytes,
	}
	if e.server.Stdio() {
		// A server that died (its session broke, and was dropped) starts
		// again here, on the next use.
		t = commandTransport(e.server, stderr)
	}
	cs, err := client.Connect(ctx, t, nil)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	closed := e.closed
	if !closed {
		e.session = cs
	}
	e.mu.Unlock()
	if closed {
		cs.Close()
		return nil, errPoolClosed
	}
	return cs, nil
}

func (e *entry) current() *sdk.ClientSession {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.session
}

// drop forgets cs if it is still the entry's session, and closes it.
func (e *entry) drop(cs *sdk.ClientSession) {
	e.mu.Lock()
	if e.session == cs {
		e.session = nil
	}
	e.mu.Unlock()
	// Closing sends a best-effort DELETE, bounded by the SDK; the caller
	// need not wait for it.
	go cs.Close()
}

// boundError is a server's answer over one of the bounds: no retry fixes
// it, and the session is fine.
type boundError struct{ msg string }

func (e *boundError) Error() string { return e.msg }

func boundErrorf(format string, args ...any) error {
	return &boundError{msg: fmt.Sprintf(format, args...)}
}
