package connect

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.temporal.io/sdk/client"
)

type healthClient struct {
	client.Client
	err error
}

func (c healthClient) CheckHealth(context.Context, *client.CheckHealthRequest) (*client.CheckHealthResponse, error) {
	return &client.CheckHealthResponse{}, c.err
}

// 200 "ok" while Temporal answers; 503 naming the reason when it does not.
func TestHealthHandler(t *testing.T) {
	rec := httptest.NewRecorder()
	HealthHandler(healthClient{})(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if rec.Code != http.StatusOK || rec.Body.String() != "ok\n" {
		t.Errorf("healthy: %d %q", rec.Code, rec.Body)
	}
	rec = httptest.NewRecorder()
	HealthHandler(healthClient{err: errors.New("connection refused")})(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "connection refused") {
		t.Errorf("unreachable: %d %q", rec.Code, rec.Body)
	}
}
