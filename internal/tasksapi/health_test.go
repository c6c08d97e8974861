package tasksapi

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/agenttask/agenttask/internal/broker"
	"github.com/agenttask/agenttask/internal/codec"
	"github.com/agenttask/agenttask/internal/definitions"
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

// An API whose broker is away serves: /healthz answers 200 and says that
// streaming is off and why; a stream asked for is 503 streaming_unavailable
// naming the broker and the two ways on.
func TestStreamingOffWhileTheBrokerIsAway(t *testing.T) {
	codec.ForgetMissingKeys() // what other tests decoded (/healthz would say "degraded")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	url := "nats://" + ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens: the broker is away
	b, err := broker.Start(url, "tasksapi-test", nil)
	require.NoError(t, err)
	t.Cleanup(b.Close)

	h, _ := New(Config{Store: &definitions.Store{C: healthClient{}}, Broker: b})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.True(t, strings.HasPrefix(rec.Body.String(), "ok\nstreaming: off (the broker at "+url+" is unreachable"), rec.Body.String())

	p := (&server{cfg: Config{Broker: b}}).streamingOff()
	require.NotNil(t, p)
	require.Equal(t, http.StatusServiceUnavailable, p.Status)
	require.Equal(t, CodeStreamingUnavailable, p.Code)
	require.Equal(t, "https://agenttask.dev/problems/streaming-unavailable", p.Type)
	require.Contains(t, p.Detail, "streaming is off: the broker at "+url+" is unreachable")
	require.Contains(t, p.Detail, "run without stream")
	require.Nil(t, (&server{}).streamingOff(), "no broker: no 503 (stream is refused as invalid instead)")
}
