package connect

import (
	"context"
	"net"
	"net/http"
	"time"

	"go.temporal.io/sdk/client"
)

// HealthHandler answers GET /healthz for load balancers and compose health
// checks (the worker's and the api's), without a key: 200 "ok" while
// Temporal's frontend answers a health check within 3 s, else 503 with the
// reason.
func HealthHandler(c client.Client) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
		defer cancel()
		if _, err := c.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
			http.Error(w, "Temporal unreachable: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
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
