package llm

import (
	"net/http"
	"time"
)

// idleConnsPerProvider is how many idle connections the default client
// keeps to one provider's host. net/http's default keeps 2, so a worker
// running more model calls at once than that opens a new connection (for a
// hosted provider, a TCP and TLS handshake) for every call beyond the
// second, each time a burst comes; a worker runs up to its activity slots'
// worth at once (hundreds), so the pool keeps that many.
const idleConnsPerProvider = 256

// NewHTTPClient is the client a Router uses when RouterOptions leaves
// HTTPClient nil: net/http's default transport (proxy from the
// environment, HTTP/2, its dial and TLS timeouts) with an idle pool sized
// for concurrent model calls, and no overall timeout (each attempt's
// context governs, RouterOptions.RequestTimeout).
func NewHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 0 // no limit across providers; each host is bounded below
	t.MaxIdleConnsPerHost = idleConnsPerProvider
	t.IdleConnTimeout = 90 * time.Second
	return &http.Client{Transport: t}
}
