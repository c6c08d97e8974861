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

// A feature that is off is reported, and changes no status: the service
// serves without it.
func TestHealthHandlerReportsFeatures(t *testing.T) {
	on := Feature{Name: "streaming", Check: func() error { return nil }}
	off := Feature{Name: "streaming", Check: func() error { return errors.New("the broker at nats://127.0.0.1:1 is unreachable") }}
	for _, tc := range []struct {
		temporal error
		f        Feature
		code     int
		body     string
	}{
		{nil, on, http.StatusOK, "ok\nstreaming: on\n"},
		{nil, off, http.StatusOK, "ok\nstreaming: off (the broker at nats://127.0.0.1:1 is unreachable)\n"},
		{errors.New("connection refused"), off, http.StatusServiceUnavailable,
			"Temporal unreachable: connection refused\nstreaming: off (the broker at nats://127.0.0.1:1 is unreachable)\n"},
	} {
		rec := httptest.NewRecorder()
		HealthHandler(healthClient{err: tc.temporal}, tc.f)(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
		if rec.Code != tc.code || rec.Body.String() != tc.body {
			t.Errorf("Temporal %v, %s: %d %q, want %d %q", tc.temporal, tc.f.Name, rec.Code, rec.Body, tc.code, tc.body)
		}
	}
}
