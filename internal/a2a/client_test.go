package a2a

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAgentsFromEnv(t *testing.T) {
	env := map[string]string{
		EnvAgents:                   "billing=https://billing.example.com/.well-known/agent-card.json, ship-it=http://127.0.0.1:9/card",
		"AGENT_A2A_BILLING_TOKEN":   "tok",
		"AGENT_A2A_SHIP_IT_HEADERS": `{"X-Team": "ops"}`,
	}
	agents, err := AgentsFromEnv(func(k string) string { return env[k] })
	require.NoError(t, err)
	require.Equal(t, []string{"billing", "ship-it"}, agents.Names())
	require.Equal(t, "Bearer tok", agents["billing"].Header.Get("Authorization"))
	require.Equal(t, "ops", agents["ship-it"].Header.Get("X-Team"))

	for _, c := range []struct{ list, want string }{
		{"billing", "is not name=cardURL"},
		{"bill ing=https://x", "is not name=cardURL"},
		{"b/x=https://x/card", "must be 1 to 64 letters"},
		{"b=ftp://x/card", "is not an http:// or https:// URL"},
		{"b=https://u:p@x/card", "the URL carries credentials"},
		{"b=https://x/card,b=https://y/card", "is listed twice"},
		{"a-b=https://x/card,a_b=https://y/card", "would both read AGENT_A2A_A_B_TOKEN"},
	} {
		_, err := AgentsFromEnv(func(k string) string {
			if k == EnvAgents {
				return c.list
			}
			return ""
		})
		require.ErrorContains(t, err, c.want, c.list)
	}
	none, err := AgentsFromEnv(func(string) string { return "" })
	require.NoError(t, err)
	require.Empty(t, none)
}

// fakeAgent serves a card and a JSON-RPC endpoint; answer writes the
// endpoint's answers.
func fakeAgent(t *testing.T, iface func(base string) string, answer func(w http.ResponseWriter, method string)) (*Client, *atomic.Int32) {
	t.Helper()
	var cards atomic.Int32
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/agent-card.json" {
			cards.Add(1)
			_, _ = w.Write([]byte(`{"supportedInterfaces":[{"url":"` + iface(srv.URL) + `","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`))
			return
		}
		require.Equal(t, "1.0", r.Header.Get("A2A-Version"))
		require.Equal(t, "Bearer tok", r.Header.Get("Authorization"))
		var req RPCRequest
		require.NoError(t, json.NewDecoder(r.Body).Decode(&req))
		answer(w, req.Method)
	}))
	t.Cleanup(srv.Close)
	agents := Agents{"x": {Name: "x", CardURL: srv.URL + "/.well-known/agent-card.json", Header: http.Header{"Authorization": {"Bearer tok"}}}}
	return NewClient(agents, srv.Client()), &cards
}

func TestClientReadsTasksAndClassifiesFailures(t *testing.T) {
	ctx := context.Background()
	c, cards := fakeAgent(t, func(base string) string { return base + "/rpc" }, func(w http.ResponseWriter, method string) {
		switch method {
		case "SendMessage":
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"message":{"messageId":"m","contextId":"c","role":"ROLE_AGENT","parts":[{"text":"at once"}]}}}`))
		case "GetTask":
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"id":"t1","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"},"artifacts":[{"artifactId":"a","parts":[{"text":"done"},{"data":{"n":1}}]}]}}`))
		case "CancelTask":
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32002,"message":"Task not cancelable"}}`))
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	task, err := c.Send(ctx, "x", SendParams{Message: &Message{MessageID: "m1", Parts: []Part{TextPart("hi")}}})
	require.NoError(t, err)
	require.Equal(t, StateCompleted, task.Status.State, "a message alone is a completed exchange")
	require.Equal(t, "at once", task.Answer())

	task, err = c.Get(ctx, "x", "t1")
	require.NoError(t, err)
	require.Equal(t, "done\n{\"n\":1}", task.Answer())
	require.Equal(t, int32(1), cards.Load(), "the card is read once and kept")

	_, err = c.Cancel(ctx, "x", "t1")
	require.ErrorContains(t, err, "refused CancelTask: Task not cancelable (code -32002)")
	require.False(t, Retryable(err))

	err = c.call(ctx, "x", "Other", TaskParams{}, &struct{}{})
	require.ErrorContains(t, err, "answered HTTP 503")
	require.True(t, Retryable(err), "a 5xx is waited out")

	_, err = c.Get(ctx, "nobody", "t1")
	require.ErrorContains(t, err, `this worker lists no A2A agent "nobody"`)
	require.False(t, Retryable(err))
	_, err = (*Client)(nil).Get(ctx, "x", "t1")
	require.ErrorContains(t, err, "this worker lists no A2A agents")
}

// A card may not send the worker's requests, and the operator's token, to
// another origin than the one the operator listed.
func TestClientRefusesAnEndpointOnAnotherOrigin(t *testing.T) {
	c, _ := fakeAgent(t, func(string) string { return "http://169.254.169.254/latest" }, func(w http.ResponseWriter, _ string) {
		t.Error("no request may reach the endpoint")
	})
	_, err := c.Get(context.Background(), "x", "t1")
	require.ErrorContains(t, err, "not on the card's origin")
	require.False(t, Retryable(err))

	c, _ = fakeAgent(t, func(string) string { return "/rpc" }, func(w http.ResponseWriter, _ string) {
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"id":"t1","status":{"state":"TASK_STATE_WORKING"}}}`))
	})
	task, err := c.Get(context.Background(), "x", "t1")
	require.NoError(t, err, "a relative endpoint is on the card's origin")
	require.Equal(t, StateWorking, task.Status.State)
}

func TestClientRefusesACardWithoutV1JSONRPC(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"url":"http://x/","protocolVersion":"0.3.0"}`))
	}))
	defer srv.Close()
	c := NewClient(Agents{"old": {Name: "old", CardURL: srv.URL + "/card"}}, srv.Client())
	_, err := c.Get(context.Background(), "old", "t1")
	require.ErrorContains(t, err, "offers no JSON-RPC interface of A2A 1.x")
	require.False(t, Retryable(err))
	require.True(t, strings.Contains(err.Error(), "this worker speaks A2A 1.0 over JSON-RPC"))
}
