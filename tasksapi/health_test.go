package tasksapi

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"go.temporal.io/sdk/client"

	"github.com/agenttask/agenttask/definitions"
)

type healthClient struct {
	client.Client
	err error
}

func (c healthClient) CheckHealth(context.Context, *client.CheckHealthRequest) (*client.CheckHealthResponse, error) {
	return &client.CheckHealthResponse{}, c.err
}

// /healthz needs no key: 200 while Temporal answers, 503 when it does not.
func TestHealthz(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{{nil, http.StatusOK}, {errors.New("connection refused"), http.StatusServiceUnavailable}} {
		h, _ := New(Config{Store: &definitions.Store{C: healthClient{err: tc.err}}})
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
		if rec.Code != tc.want {
			t.Errorf("Temporal error %v: %d %s, want %d", tc.err, rec.Code, rec.Body, tc.want)
		}
	}
}
