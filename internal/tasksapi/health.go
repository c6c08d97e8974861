package tasksapi

import (
	"net/http"

	"github.com/agenttask/agenttask/internal/connect"
)

// healthz answers GET /healthz without a key, outside the OpenAPI
// description: connect.HealthHandler on the store's Temporal client, with
// a line "streaming: on" or "streaming: off (why)" when the API has a
// broker (its being off does not fail the check).
func (s *server) healthz(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Store == nil || s.cfg.Store.C == nil {
		http.Error(w, "no Temporal client", http.StatusServiceUnavailable)
		return
	}
	var features []connect.Feature
	if s.cfg.Broker != nil {
		features = append(features, connect.Streaming(s.cfg.Broker))
	}
	connect.HealthHandler(s.cfg.Store.C, features...)(w, r)
}
