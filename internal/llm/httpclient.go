package llm

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
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
// context governs, RouterOptions.RequestTimeout). A redirect to another
// origin drops every header that may carry a provider key
// (dropKeysOnRedirect).
func NewHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 0 // no limit across providers; each host is bounded below
	t.MaxIdleConnsPerHost = idleConnsPerProvider
	t.IdleConnTimeout = 90 * time.Second
	return &http.Client{Transport: t, CheckRedirect: dropKeysOnRedirect(nil)}
}

// maxRedirects is net/http's own bound, kept when CheckRedirect is ours.
const maxRedirects = 10

// keepsHeadersOnRedirect lists the headers a redirect to another origin
// keeps: they describe the body and the client, never a credential. Every
// other header is dropped there, whatever its name: providers carry keys in
// headers of their own (Anthropic's x-api-key, Gemini's x-goog-api-key,
// a gateway's api-key), which net/http forwards to any host (it drops only
// Authorization, Cookie and WWW-Authenticate).
var keepsHeadersOnRedirect = map[string]bool{
	"Accept": true, "Accept-Encoding": true, "Accept-Language": true,
	"Content-Type": true, "Content-Length": true, "User-Agent": true,
}

// dropKeysOnRedirect is an http.Client's CheckRedirect: a redirect to
// another origin (scheme, host or port other than the first request's)
// goes without the request's headers beyond keepsHeadersOnRedirect, so a
// provider key reaches no host but the one the operator configured. next
// is the client's own CheckRedirect (nil: net/http's bound of 10).
func dropKeysOnRedirect(next func(*http.Request, []*http.Request) error) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) > 0 && !sameOrigin(req.URL, via[0].URL) {
			for name := range req.Header {
				if !keepsHeadersOnRedirect[http.CanonicalHeaderKey(name)] {
					req.Header.Del(name)
				}
			}
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= maxRedirects {
			return fmt.Errorf("stopped after %d redirects", maxRedirects)
		}
		return nil
	}
}

// sameOrigin reports whether a and b have one scheme, host and port.
func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(hostPort(a), hostPort(b))
}

// hostPort is u's host with its port, the scheme's default when u names none.
func hostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch strings.ToLower(u.Scheme) {
		case "https":
			port = "443"
		case "http":
			port = "80"
		}
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// withoutKeysOnRedirect is hc, or a copy of it whose redirects to another
// origin drop the request's credentials (dropKeysOnRedirect). NewRouter
// applies it to every client, the caller's own included.
func withoutKeysOnRedirect(hc *http.Client) *http.Client {
	c := *hc
	c.CheckRedirect = dropKeysOnRedirect(hc.CheckRedirect)
	return &c
}
