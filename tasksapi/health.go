package tasksapi

import (
	"context"
	"net/http"
	"time"

	"go.temporal.io/sdk/client"
)

// healthz answers GET /healthz for load balancers and compose health
// checks, without a key: 200 while Temporal's frontend answers a health
// check, else 503. It is not part of the OpenAPI description.
func (s *server) healthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if s.cfg.Store == nil || s.cfg.Store.C == nil {
		http.Error(w, "no Temporal client", http.StatusServiceUnavailable)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	if _, err := s.cfg.Store.C.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
		http.Error(w, "Temporal unreachable: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}
