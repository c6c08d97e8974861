package connect

import (
	"context"
	"net"
	"net/http"
	"strings"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"

	"github.com/agenttask/agenttask/internal/broker"
	"github.com/agenttask/agenttask/internal/codec"
)

// Feature is an optional part of a service, reported by its health check
// but never failing it: Check is nil while it works, else why it does not.
type Feature struct {
	Name  string
	Check func() error
}

// Streaming is the broker's feature: "streaming: on", or off and why (the
// broker unreachable, or its stream not ready). Streaming is an extra: a
// worker runs turns unstreamed without it, the api runs unstreamed runs.
func Streaming(b *broker.Broker) Feature {
	return Feature{Name: "streaming", Check: b.Err}
}

// LogStreaming is a broker.Start onChange that logs streaming going on and
// off; meanwhile says what the process does while it is off.
func LogStreaming(l log.Logger, meanwhile string) func(on bool, why error) {
	return func(on bool, why error) {
		if on {
			l.Info("streaming is on: connected to the broker, its stream ready")
			return
		}
		l.Warn("streaming is off: "+meanwhile+"; the broker is tried again in the background", "error", why)
	}
}

// HealthHandler answers GET /healthz for load balancers and compose health
// checks (the worker's and the api's), without a key: 200 "ok" while
// Temporal's frontend answers a health check within 3 s, else 503 with the
// reason. A line per feature follows, "NAME: on" or "NAME: off (WHY)";
// a feature that is off does not change the status: the service serves
// without it. Once the process has met data encrypted with a key it does
// not hold (codec.MissingKeys), the first line is "degraded" instead of
// "ok" (still 200: restarting would not bring the key, and the process
// serves whatever does not need it) and a line per key names it and
// AGENT_CODEC_KEYS, "codec: key "k1" missing: ...".
func HealthHandler(c client.Client, features ...Feature) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		var lines strings.Builder
		for _, f := range features {
			if err := f.Check(); err != nil {
				lines.WriteString(f.Name + ": off (" + err.Error() + ")\n")
			} else {
				lines.WriteString(f.Name + ": on\n")
			}
		}
		missing := codec.HealthLines()
		lines.WriteString(missing)
		ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
		defer cancel()
		if _, err := c.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("Temporal unreachable: " + err.Error() + "\n" + lines.String()))
			return
		}
		status := "ok\n"
		if missing != "" {
			status = "degraded\n"
		}
		_, _ = w.Write([]byte(status + lines.String()))
	}
}

// ServeUntilDone serves h on ln until ctx ends, then shuts the server down
// (waiting up to 5 s for requests in flight): the worker's /healthz and the
// /metrics of the worker and the api.
func ServeUntilDone(ctx context.Context, ln net.Listener, h http.Handler) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
}
