package tasksapi

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/agenttask/agenttask/internal/catalog"
)

type modelsOut struct {
	Body struct {
		Data []catalog.Model `json:"data"`
	}
}

func (s *server) registerModels() {
	huma.Register(s.api, op("listModels", http.MethodGet, "/v1/models", PermView, "List the model catalogue, by name", http.StatusOK),
		func(ctx context.Context, _ *struct{}) (*modelsOut, error) {
			out := &modelsOut{}
			out.Body.Data = s.cfg.Catalog.List()
			return out, nil
		})
}
