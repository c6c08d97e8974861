package mcp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync"
)

// transport adds a server's configured headers to every request and
// reports what each response was to the operation's observer, so outages
// are told apart by status and network error rather than by the SDK's
// error text; it also bounds every response body at maxResponseBytes.
type transport struct {
	base   http.RoundTripper
	header http.Header
	origin string // scheme://host of the server's URL
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	obs := observerFrom(req.Context())
	// Only the configured server gets its credentials, not a host it
	// redirects to.
	if len(t.header) > 0 && req.URL.Scheme+"://"+req.URL.Host == t.origin {
		req = req.Clone(req.Context())
		for name, values := range t.header {
			req.Header[name] = values
		}
	}
	var reused bool
	if obs != nil {
		trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) { reused = info.Reused }}
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		obs.transport(err, reused)
		return nil, err
	}
	switch code := resp.StatusCode; {
	case code == http.StatusTooManyRequests || code >= 500:
		obs.outage(code)
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		obs.auth(code)
	case code == http.StatusNotFound && req.Header.Get("Mcp-Session-Id") != "":
		obs.gone()
	}
	resp.Body = &boundedBody{body: resp.Body, left: maxResponseBytes, obs: obs}
	return resp, nil
}

// errResponseTooLarge ends a read past maxResponseBytes.
var errResponseTooLarge = errors.New("MCP response over the size bound")

// boundedBody reads at most left bytes, then fails the operation: the
// bound is noted and its context cancelled, so the SDK stops rather than
// reconnecting to read the rest.
type boundedBody struct {
	body io.ReadCloser
	left int64
	obs  *observer
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body of exactly the bound from a longer one.
		var one [1]byte
		if n, _ := b.body.Read(one[:]); n == 0 {
			return 0, io.EOF
		}
		b.obs.tooLarge()
		return 0, errResponseTooLarge
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.body.Read(p)
	b.left -= int64(n)
	if err != nil && err != io.EOF {
		// The stream broke mid-answer (the server went away). Without event
		// IDs the SDK would wait for the lost answer until the deadline;
		// ending the operation now makes it an outage at once.
		b.obs.broken(err)
	}
	return n, err
}

func (b *boundedBody) Close() error { return b.body.Close() }

// observer collects what the transport saw during one operation.
type observer struct {
	mu     sync.Mutex
	seen   observed
	cancel context.CancelFunc
}

type observed struct {
	outageStatus int   // 429 or 5xx
	authStatus   int   // 401 or 403
	transportErr error // the request did not complete
	staleConn    bool  // ... on a kept-alive connection the server had closed
	sessionGone  bool  // 404 to a request in a session
	oversize     bool
}

type observerKey struct{}

// observe returns a context whose requests report to a new observer, and
// its cancel function.
func observe(ctx context.Context) (context.Context, *observer, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	obs := &observer{cancel: cancel}
	return context.WithValue(ctx, observerKey{}, obs), obs, cancel
}

// observerFrom returns ctx's observer; a nil one (requests outside an
// operation, such as the session's closing DELETE) notes nothing.
func observerFrom(ctx context.Context) *observer {
	obs, _ := ctx.Value(observerKey{}).(*observer)
	return obs
}

func (o *observer) note(f func(*observed)) {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	f(&o.seen)
}

// transport notes a request that got no response. On a reused
// connection that is most often one the server closed while it sat idle
// (the server restarted), but the server may also have died while running
// it: only an idempotent request is sent again.
func (o *observer) transport(err error, reused bool) {
	o.note(func(s *observed) {
		if s.transportErr == nil {
			s.transportErr = err
			s.staleConn = reused
		}
	})
}
func (o *observer) outage(code int) { o.note(func(s *observed) { s.outageStatus = code }) }
func (o *observer) auth(code int)   { o.note(func(s *observed) { s.authStatus = code }) }
func (o *observer) gone()           { o.note(func(s *observed) { s.sessionGone = true }) }

func (o *observer) broken(err error) {
	o.transport(err, false)
	if o != nil {
		o.cancel()
	}
}

func (o *observer) tooLarge() {
	o.note(func(s *observed) { s.oversize = true })
	if o != nil {
		o.cancel()
	}
}

func (o *observer) snapshot() observed {
	if o == nil {
		return observed{}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.seen
}

// reset forgets what was seen, before an operation is tried again.
func (o *observer) reset() { o.note(func(s *observed) { *s = observed{} }) }
