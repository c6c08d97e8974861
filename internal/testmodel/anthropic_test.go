package testmodel_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/internal/testmodel"
)

func postRaw(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", bytes.NewBufferString(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

const sysBlock = `{"type":"text","text":"You are a patient agent who answers in one line.","cache_control":{"type":"ephemeral"}}`

// The cache simulation: the first request writes the prefix up to its
// breakpoint, a second with the same system prompt reads it and writes the
// rest up to its last breakpoint; a changed system prompt reads nothing.
func TestAnthropicCacheSimulation(t *testing.T) {
	srv := testmodel.Start()
	defer srv.Close()
	url := srv.Root + "/v1/messages"
	status, body := postRaw(t, url, `{"model":"m","max_tokens":50,"system":[`+sysBlock+`],"messages":[{"role":"user","content":"hello"}]}`)
	require.Equal(t, http.StatusOK, status, body)
	var first struct {
		Content []struct{ Type, Text string }
		Usage   map[string]int
	}
	require.NoError(t, json.Unmarshal([]byte(body), &first))
	require.Equal(t, "echo: hello", first.Content[0].Text)
	require.Zero(t, first.Usage["cache_read_input_tokens"])
	require.Positive(t, first.Usage["cache_creation_input_tokens"])

	second := `{"model":"m","max_tokens":50,"system":[` + sysBlock + `],"messages":[{"role":"user","content":"hello"},` +
		`{"role":"assistant","content":[{"type":"text","text":"echo: hello","cache_control":{"type":"ephemeral"}}]},{"role":"user","content":"again"}]}`
	status, body = postRaw(t, url, second)
	require.Equal(t, http.StatusOK, status, body)
	var got struct{ Usage map[string]int }
	require.NoError(t, json.Unmarshal([]byte(body), &got))
	require.Equal(t, first.Usage["cache_creation_input_tokens"], got.Usage["cache_read_input_tokens"])
	require.Positive(t, got.Usage["cache_creation_input_tokens"])
	calls := srv.Calls()
	require.Equal(t, testmodel.ProtocolAnthropic, calls[1].Protocol)
	require.Equal(t, 2, calls[1].CacheBreakpoints)
	require.Greater(t, calls[1].CachePrefixBytes, calls[0].CachePrefixBytes)

	changed := strings.Replace(second, "patient", "hasty", 1)
	_, body = postRaw(t, url, changed)
	require.NoError(t, json.Unmarshal([]byte(body), &got))
	require.Zero(t, got.Usage["cache_read_input_tokens"], "a changed system prompt misses the cache")

	five := `{"model":"m","max_tokens":50,"system":[` + strings.Repeat(sysBlock+",", 4) + sysBlock + `],"messages":[{"role":"user","content":"x"}]}`
	status, body = postRaw(t, url, five)
	require.Equal(t, http.StatusBadRequest, status)
	require.Contains(t, body, "a maximum of 4 blocks with cache_control")
	status, body = postRaw(t, url, `{"model":"m","messages":[{"role":"user","content":"x"}]}`)
	require.Equal(t, http.StatusBadRequest, status)
	require.Contains(t, body, `"invalid_request_error"`)
	require.Contains(t, body, "max_tokens")
}

// A streamed answer follows the Messages API's event sequence.
func TestAnthropicStreamEvents(t *testing.T) {
	srv := testmodel.Start()
	defer srv.Close()
	srv.SetHandler(func(c testmodel.Call) testmodel.Reply {
		return testmodel.Reply{Chunks: []string{"a", "b"}, ToolCalls: []testmodel.ToolCall{{ID: "t", Name: "f", Arguments: `{"k":"v"}`}}}
	})
	status, body := postRaw(t, srv.Root+"/v1/messages", `{"model":"m","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"x"}]}`)
	require.Equal(t, http.StatusOK, status)
	var names []string
	for _, line := range strings.Split(body, "\n") {
		if n, ok := strings.CutPrefix(line, "event: "); ok {
			names = append(names, n)
		}
	}
	require.Equal(t, []string{"message_start", "content_block_start", "content_block_delta", "content_block_delta", "content_block_stop",
		"content_block_start", "content_block_delta", "content_block_delta", "content_block_stop", "message_delta", "message_stop"}, names)
	require.Contains(t, body, `"type":"input_json_delta"`)
	require.Contains(t, body, `"stop_reason":"tool_use"`)
}

func TestGeminiRoutes(t *testing.T) {
	srv := testmodel.Start()
	defer srv.Close()
	status, body := postRaw(t, srv.Root+"/v1beta/models/gem:generateContent", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`)
	require.Equal(t, http.StatusOK, status, body)
	require.Contains(t, body, `"text":"echo: hi"`)
	require.Contains(t, body, `"finishReason":"STOP"`)
	status, body = postRaw(t, srv.Root+"/v1beta/models/gem:streamGenerateContent?alt=sse", `{"contents":[{"parts":[{"text":"hi there"}]}]}`)
	require.Equal(t, http.StatusOK, status, body)
	require.Equal(t, 4, strings.Count(body, "data: "), body) // "echo: ", "hi ", "there", the finish
	require.Equal(t, testmodel.ProtocolGemini, srv.Calls()[1].Protocol)
	require.Equal(t, "gem", srv.Calls()[1].Model)
	status, _ = postRaw(t, srv.Root+"/v1beta/models/gem:countTokens", `{}`)
	require.Equal(t, http.StatusNotFound, status)
}
