package tasksapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/humatest"
	"github.com/danielgtaylor/huma/v2/sse"
	"github.com/stretchr/testify/require"
)

// A streamed run writes its events itself (its operation answers JSON or
// events, which sse.Register cannot): byte for byte what huma's Sender
// writes for GET /v1/runs/{id}/events, HTML escapes and omitted ids
// included. Keep-alives are comment lines between events.
func TestRunStreamWritesEventsAsHumasSenderDoes(t *testing.T) {
	events := []sse.Message{
		{ID: 1, Data: StreamEvent{TextEvent{Type: "text", Text: "a <b> & c"}}},
		{ID: 2, Data: StreamEvent{TextEvent{Type: "text", Text: "again", Attempt: 2}}},
		{ID: 3, Data: StreamEvent{DoneEvent{Type: "done", StopReason: "end", Usage: RunUsage{InputTokens: 3, OutputTokens: 4, Units: 1}, JSON: json.RawMessage(`{"a":1}`)}}},
		{Data: errorEvent(problem(CodeRunTimeout, "late", ""), 0)},
	}
	_, api := humatest.New(t)
	sse.Register(api, huma.Operation{Method: http.MethodGet, Path: "/events"}, streamEvents, func(_ context.Context, _ *struct{}, send sse.Sender) {
		for _, m := range events {
			require.NoError(t, send(m))
		}
	})
	want := api.Get("/events").Body.String()

	rec := httptest.NewRecorder()
	out := openStream(humatest.NewContext(nil, httptest.NewRequest(http.MethodPost, "/v1/tasks/t/run", nil), rec), nil)
	for _, m := range events {
		require.NoError(t, out.send(m))
	}
	require.Equal(t, want, rec.Body.String())
	require.Equal(t, `id: 1
data: {"type":"text","text":"a \u003cb\u003e \u0026 c"}

id: 2
data: {"type":"text","text":"again","attempt":2}

id: 3
data: {"type":"done","stopReason":"end","usage":{"inputTokens":3,"outputTokens":4,"units":1},"json":{"a":1}}

data: {"type":"error","title":"Gateway Timeout","status":504,"code":"run_timeout","detail":"late"}

`, rec.Body.String())
	require.Equal(t, "text/event-stream", rec.Header().Get("Content-Type"))
	require.Equal(t, "no-cache", rec.Header().Get("Cache-Control"))
	require.Equal(t, "no", rec.Header().Get("X-Accel-Buffering"))

	require.NoError(t, out.keepAlive())
	require.Contains(t, rec.Body.String(), "\n\n: keep-alive\n\n")
}

// Each write of a stream has sse.WriteTimeout, as huma's Sender gives its
// events; the deadline is lifted at the stream's end, so a stream that
// ends quiet, long after its last write, still ends cleanly (net/http
// writes the answer's end after the handler).
func TestAStreamThatEndsQuietEndsCleanly(t *testing.T) {
	defer func(d time.Duration) { sse.WriteTimeout = d }(sse.WriteTimeout)
	sse.WriteTimeout = 50 * time.Millisecond
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		out := openStream(humatest.NewContext(nil, r, w), nil)
		defer out.end()
		_ = out.event(1, StreamEvent{TextEvent{Type: "text", Text: "hi"}})
		time.Sleep(4 * sse.WriteTimeout)
	}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err, "the stream's end")
	require.Equal(t, "id: 1\ndata: {\"type\":\"text\",\"text\":\"hi\"}\n\n", string(body))
}
