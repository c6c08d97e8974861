package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/agenttask/agenttask/internal/a2apush"
	"github.com/agenttask/agenttask/internal/broker"
	"github.com/agenttask/agenttask/internal/catalog"
	"github.com/agenttask/agenttask/internal/definitions"
	"github.com/agenttask/agenttask/internal/tasksapi"
)

// Keys of the API under test.
const (
	devKey  = "dev-key-1"
	callKey = "call-key-1"
	viewKey = "view-key-1"
)

// apiServer is the Tasks API over real HTTP, its store on the shared
// Temporal server under a prefix of the test's own (so projects of
// different tests never meet).
type apiServer struct {
	t       *testing.T
	url     string
	openapi *openAPIDoc
}

// apiOption changes the configuration of an API under test.
type apiOption func(*tasksapi.Config)

// withRunTimeout makes runs wait at most d for their answer (default 5m).
func withRunTimeout(d time.Duration) apiOption {
	return func(c *tasksapi.Config) { c.RunTimeout = d }
}

// withoutBroker serves an API that streams nothing.
func withoutBroker(c *tasksapi.Config) { c.Broker = nil }

// newAPI serves the API; runs go to h's worker. Its runs stream through
// the shared broker.
func newAPI(t *testing.T, h *harness, opts ...apiOption) *apiServer {
	t.Helper()
	return newAPIOn(t, h, temporalNS, opts...)
}

// newAPIOn serves the API on the namespace ns.
func newAPIOn(t *testing.T, h *harness, ns string, opts ...apiOption) *apiServer {
	t.Helper()
	queue := h.queue + "-api"
	wc, err := client.NewClientFromExisting(sdk, client.Options{Namespace: ns, Logger: quietLogger()})
	require.NoError(t, err)
	w := sdkworker.New(wc, queue, sdkworker.Options{})
	definitions.Register(w)
	keys, err := tasksapi.ParseKeys(callKey+"=call,"+viewKey+"=view", devKey)
	require.NoError(t, err)
	store := &definitions.Store{C: wc, Queue: queue, Prefix: "it/" + h.queue + "/"}
	cfg := tasksapi.Config{Store: store, Keys: keys, Catalog: catalog.Builtin(), TaskQueue: h.queue, ProcessedIn: "KE",
		// Webhooks on this machine's loopback (the tests'), signed.
		PushWorker: w, PushOptions: a2apush.Options{AllowPrivate: true, SigningKey: []byte(pushSigningKey)}}
	if natsURL != "" { // none only against an external server without AGENT_IT_NATS_URL
		events, err := broker.Connect(ctxT(t, 30*time.Second), natsURL, "it-api")
		require.NoError(t, err)
		t.Cleanup(events.Close)
		cfg.Broker = events
	}
	for _, o := range opts {
		o(&cfg)
	}
	handler, _ := tasksapi.New(cfg)
	require.NoError(t, w.Start()) // after New, which registers the push notifications' workflow
	t.Cleanup(func() { w.Stop(); wc.Close() })
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	return &apiServer{t: t, url: srv.URL, openapi: checkedInOpenAPI(t, srv.URL)}
}

// reply is an HTTP answer: status, headers and the decoded JSON body.
type reply struct {
	Status int
	Header http.Header
	Raw    []byte
	JSON   map[string]any
}

// call sends method path with key (none if "") and body: a string is sent
// as it is, anything else as JSON.
func (a *apiServer) call(method, path, key string, body any, header ...string) reply {
	a.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	case []byte:
		r = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		require.NoError(a.t, err)
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, a.url+path, r)
	require.NoError(a.t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(a.t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(a.t, err)
	out := reply{Status: resp.StatusCode, Header: resp.Header, Raw: raw}
	if len(raw) > 0 {
		require.NoError(a.t, json.Unmarshal(raw, &out.JSON), "%s %s answered %d: %s", method, path, resp.StatusCode, raw)
	}
	a.openapi.check(a.t, method, path, out) // every answer is one the description allows
	return out
}

// data is the answer's "data" object.
func (r reply) data() map[string]any {
	d, _ := r.JSON["data"].(map[string]any)
	return d
}

// requireProblem checks an error answer: status, problem+json, code and field.
func requireProblem(t *testing.T, r reply, status int, code, field string) {
	t.Helper()
	require.Equal(t, status, r.Status, "%s", r.Raw)
	require.Equal(t, "application/problem+json", r.Header.Get("Content-Type"), "%s", r.Raw)
	require.Equal(t, code, r.JSON["code"], "%s", r.Raw)
	require.Equal(t, float64(status), r.JSON["status"])
	require.NotEmpty(t, r.JSON["detail"])
	require.NotEmpty(t, r.JSON["type"])
	require.NotEmpty(t, r.JSON["title"])
	if field != "" {
		require.Equal(t, field, r.JSON["field"], "%s", r.Raw)
	} else {
		require.Nil(t, r.JSON["field"], "%s", r.Raw)
	}
}

// pushSigningKey signs the A2A push notifications of the tests' APIs.
const pushSigningKey = "test-push-signing-key"
