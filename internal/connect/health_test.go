package connect

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/client"

	"github.com/agenttask/agenttask/internal/codec"
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

// Once the process has met data under a key it does not hold, /healthz
// says "degraded" (still 200) and names the key and AGENT_CODEC_KEYS.
func TestHealthHandlerNamesAMissingKey(t *testing.T) {
	codec.ForgetMissingKeys()
	defer codec.ForgetMissingKeys()
	k1, err := codec.New(codec.Keys{"k1": make([]byte, 32)}, "k1")
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := k1.Encode([]*commonpb.Payload{{Data: []byte(`"x"`)}})
	if err != nil {
		t.Fatal(err)
	}
	var none *codec.Codec
	if _, err := none.Decode(sealed); err == nil {
		t.Fatal("decoded without keys")
	}
	rec := httptest.NewRecorder()
	HealthHandler(healthClient{})(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	body := rec.Body.String()
	if rec.Code != http.StatusOK || !strings.HasPrefix(body, "degraded\ncodec: key \"k1\" missing: encrypted with key \"k1\", but AGENT_CODEC_KEYS is not set") {
		t.Errorf("missing key: %d %q", rec.Code, body)
	}
}
