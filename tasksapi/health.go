package tasksapi

import (
	"net/http"

	"github.com/agenttask/agenttask/connect"
)

// healthz answers GET /healthz without a key, outside the OpenAPI
// description: connect.HealthHandler on the store's Temporal client.
func (s *server) healthz(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Store == nil || s.cfg.Store.C == nil {
		http.Error(w, "no Temporal client", http.StatusServiceUnavailable)
		return
	}
	connect.HealthHandler(s.cfg.Store.C)(w, r)
}
