package tasksapi

import (
	"net/http"
	"time"
)

// The HTTP server's timeouts. A slow or idle client cannot hold a
// connection or a handler for ever, while a streamed answer (SSE, which
// may last as long as a run) is never cut: there is no WriteTimeout, and
// ReadTimeout bounds only reading the request. net/http lifts the read
// deadline once the request's body has been read (its background read,
// which notices a client going away, runs without one), so a stream that
// outlasts ReadTimeout goes on (TestTimeoutsLeaveStreamsAlone).
const (
	// HeaderTimeout bounds reading a request's headers.
	HeaderTimeout = 10 * time.Second
	// ReadTimeout bounds reading a whole request, headers and body: 60 s
	// is 4 MiB (the codec's largest body) at ~70 KB/s.
	ReadTimeout = 60 * time.Second
	// IdleTimeout closes a kept-alive connection with no request for this long.
	IdleTimeout = 120 * time.Second
)

// httpServer serves h with the timeouts; tests shrink them with scale
// (1: as above).
func httpServer(h http.Handler, scale float64) *http.Server {
	d := func(t time.Duration) time.Duration { return time.Duration(float64(t) * scale) }
	return &http.Server{Handler: h, ReadHeaderTimeout: d(HeaderTimeout), ReadTimeout: d(ReadTimeout), IdleTimeout: d(IdleTimeout)}
}
