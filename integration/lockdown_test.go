package integration

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/agenttask/agenttask/internal/codec"
	"github.com/agenttask/agenttask/internal/tasksapi"
	"github.com/agenttask/agenttask/worker"
)

// The api binary, locked down (docs/configuration.md#api,
// docs/contract.md#the-codec-server): its codec server decodes for a decode
// key only, for its own namespace only, answers CORS for the configured
// origin only, takes at most 4 MiB and logs who decoded how much but never
// what; with AGENT_API_RATE_LIMIT=60 a key's 61st call within a minute is
// 429 rate_limited with Retry-After.
func TestLockedDownAPIAndCodec(t *testing.T) {
	h := newHarness(t)
	k := randomKey(t)
	const decodeKey, ui = "decode-key-1", "https://ui.example.com"
	addr := freeAddr(t)
	p := startWatched(t, "api", apiBinary(t), append(os.Environ(), "TEMPORAL_ADDRESS="+temporalAddr, "TEMPORAL_NAMESPACE="+temporalNS,
		"AGENT_API_ADDR="+addr, "AGENT_API_TASK_QUEUE="+h.queue+"-api", worker.EnvTaskQueue+"="+h.queue,
		tasksapi.EnvStorePrefix+"=it/"+h.queue+"/", "AGENT_NATS_URL=",
		"DEVELOPER_KEYS="+devKey, "API_KEYS="+callKey+"=call,"+viewKey+"=view,"+decodeKey+"=decode",
		tasksapi.EnvRateLimit+"=60", codec.EnvKeys+"=k1:"+base64.StdEncoding.EncodeToString(k),
		tasksapi.EnvCodecCORSOrigins+"="+ui))
	waitListening(t, addr)
	base := "http://" + addr

	c, err := codec.New(codec.Keys{"k1": k}, "k1")
	require.NoError(t, err)
	const secret = "lockdown-secret-okapi-31337"
	var sealed []*commonpb.Payload
	for i := 0; i < 2; i++ {
		pl, err := c.DataConverter().ToPayload(secret)
		require.NoError(t, err)
		sealed = append(sealed, pl)
	}
	body, err := protojson.Marshal(&commonpb.Payloads{Payloads: sealed})
	require.NoError(t, err)
	post := func(key string, body []byte, header ...string) (*http.Response, []byte) {
		req, err := http.NewRequest(http.MethodPost, base+"/codec/decode", bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+key)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	problemCode := func(b []byte) string {
		var p tasksapi.Problem
		require.NoError(t, json.Unmarshal(b, &p), "%s", b)
		return p.Code
	}

	// A decode key decodes, from the configured origin with its CORS answer.
	resp, answer := post(decodeKey, body, "X-Namespace", temporalNS, "Origin", ui)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", answer)
	require.Contains(t, string(answer), base64.StdEncoding.EncodeToString([]byte(`"`+secret+`"`)))
	require.Equal(t, ui, resp.Header.Get("Access-Control-Allow-Origin"))
	// A view key, a call key and a developer key do not.
	for _, key := range []string{viewKey, callKey, devKey} {
		resp, answer = post(key, body, "X-Namespace", temporalNS)
		require.Equal(t, http.StatusForbidden, resp.StatusCode, "%s: %s", key, answer)
		require.Equal(t, tasksapi.CodeForbidden, problemCode(answer))
		require.NotContains(t, string(answer), secret)
	}
	// Another namespace's Web UI is refused.
	resp, answer = post(decodeKey, body, "X-Namespace", "someone-else")
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "%s", answer)
	require.Contains(t, string(answer), `not this codec server's namespace`)
	// Another origin gets no CORS answer, not even with a good key.
	resp, answer = post(decodeKey, body, "X-Namespace", temporalNS, "Origin", "https://evil.example")
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", answer) // a browser would not hand it to the page
	require.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"))
	require.Empty(t, resp.Header.Get("Access-Control-Allow-Credentials"))
	pre, err := http.NewRequest(http.MethodOptions, base+"/codec/decode", nil)
	require.NoError(t, err)
	pre.Header.Set("Origin", "https://evil.example")
	pre.Header.Set("Access-Control-Request-Method", "POST")
	presp, err := http.DefaultClient.Do(pre)
	require.NoError(t, err)
	presp.Body.Close()
	require.Equal(t, http.StatusForbidden, presp.StatusCode)
	require.Empty(t, presp.Header.Get("Access-Control-Allow-Origin"))
	// Over 4 MiB: 413.
	big := append([]byte(`{"payloads":[{"metadata":{},"data":"`), bytes.Repeat([]byte("A"), tasksapi.MaxCodecBodyBytes)...)
	resp, answer = post(decodeKey, append(big, `"}]}`...), "X-Namespace", temporalNS)
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, "%.300s", answer)
	require.Equal(t, tasksapi.CodeValidationFailed, problemCode(answer))

	// The audit log: the key's ID, the namespace, the counts; no content, no key.
	p.awaitLog(t, "codec call refused: another namespace", 10*time.Second)
	p.awaitLog(t, tasksapi.KeyID(decodeKey), 10*time.Second)
	p.mu.Lock()
	logs := p.logs.String()
	p.mu.Unlock()
	var audit []string
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, "codec call") {
			audit = append(audit, l)
		}
	}
	require.NotEmpty(t, audit)
	joined := strings.Join(audit, "\n")
	require.Contains(t, joined, "payloads")
	require.Contains(t, joined, temporalNS)
	for _, never := range []string{secret, base64.StdEncoding.EncodeToString([]byte(`"` + secret + `"`)), decodeKey, viewKey} {
		require.NotContains(t, logs, never, "the api logged content or a key")
	}

	// The rate limit: 60 calls a minute per key; the 61st is refused.
	api := &apiServer{t: t, url: base, openapi: checkedInOpenAPI(t, base)}
	start := time.Now()
	for i := 1; i <= 60; i++ {
		r := api.call("GET", "/v1/models", viewKey, nil)
		require.Equal(t, http.StatusOK, r.Status, "call %d: %s", i, r.Raw)
	}
	r := api.call("GET", "/v1/models", viewKey, nil)
	require.Less(t, time.Since(start), 50*time.Second, "the bucket refilled meanwhile: the 61st call proves nothing")
	requireProblem(t, r, http.StatusTooManyRequests, tasksapi.CodeRateLimited, "")
	retry, err := strconv.Atoi(r.Header.Get("Retry-After"))
	require.NoError(t, err, "Retry-After %q", r.Header.Get("Retry-After"))
	require.True(t, retry >= 1 && retry <= 60, "Retry-After %d", retry)
	requireProblem(t, api.call("GET", "/v1/models", "not-a-key", nil), http.StatusUnauthorized, tasksapi.CodeUnauthorized, "")
	require.Equal(t, http.StatusOK, api.call("GET", "/v1/tasks", devKey, nil).Status, "another key has its own bucket")
}
