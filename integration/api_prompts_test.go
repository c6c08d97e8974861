package integration

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/internal/tasksapi"
)

// Prompts are stored in Temporal, versioned, and read back; each rule of
// the API refuses with a problem document and stores nothing.
func TestPromptsAPI(t *testing.T) {
	h := newHarness(t)
	api := newAPI(t, h)

	r := api.call("POST", "/v1/prompts/support-agent/versions", devKey, map[string]any{"text": "You help {{customer}} for {{brand}}. Be kind to {{customer}}."})
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
	d := r.data()
	require.Equal(t, "support-agent", d["name"], "%s", r.Raw)
	require.Equal(t, float64(1), d["version"])
	require.Equal(t, []any{"customer", "brand"}, d["variables"])
	require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`, d["createdAt"])
	r = api.call("POST", "/v1/prompts/support-agent/versions", devKey, map[string]any{"text": "Short: {{customer}}"})
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
	require.Equal(t, float64(2), r.data()["version"])

	r = api.call("GET", "/v1/prompts", viewKey, nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	list := r.JSON["data"].([]any)
	require.Len(t, list, 1)
	require.Equal(t, float64(2), list[0].(map[string]any)["latestVersion"])

	r = api.call("GET", "/v1/prompts/support-agent", viewKey, nil)
	require.Equal(t, http.StatusOK, r.Status)
	require.Equal(t, float64(2), r.data()["latestVersion"])
	versions := r.data()["versions"].([]any)
	require.Len(t, versions, 2)
	require.Nil(t, versions[0].(map[string]any)["text"], "listings leave texts out")

	r = api.call("GET", "/v1/prompts/support-agent/versions/1", callKey+"x", nil)
	requireProblem(t, r, 401, tasksapi.CodeUnauthorized, "")
	r = api.call("GET", "/v1/prompts/support-agent/versions/1", viewKey, nil)
	require.Equal(t, http.StatusOK, r.Status)
	require.Equal(t, "You help {{customer}} for {{brand}}. Be kind to {{customer}}.", r.data()["text"])

	requireProblem(t, api.call("GET", "/v1/prompts/nope", viewKey, nil), 404, tasksapi.CodePromptNotFound, "")
	requireProblem(t, api.call("GET", "/v1/prompts/support-agent/versions/9", viewKey, nil), 404, tasksapi.CodePromptNotFound, "")

	// Access: developers only write prompts.
	body := map[string]any{"text": "x"}
	requireProblem(t, api.call("POST", "/v1/prompts/p/versions", "", body), 401, tasksapi.CodeUnauthorized, "")
	requireProblem(t, api.call("POST", "/v1/prompts/p/versions", "unknown", body), 401, tasksapi.CodeUnauthorized, "")
	requireProblem(t, api.call("POST", "/v1/prompts/p/versions", callKey, body), 403, tasksapi.CodeForbidden, "")
	requireProblem(t, api.call("POST", "/v1/prompts/p/versions", viewKey, body), 403, tasksapi.CodeForbidden, "")
	requireProblem(t, api.call("GET", "/v1/prompts", callKey, nil), 403, tasksapi.CodeForbidden, "")

	// Bad input: nothing is stored.
	requireProblem(t, api.call("POST", "/v1/prompts/p/versions", devKey, map[string]any{"text": strings.Repeat("x", 100_001)}), 400, tasksapi.CodeValidationFailed, "text")
	requireProblem(t, api.call("POST", "/v1/prompts/p/versions", devKey, map[string]any{"text": ""}), 400, tasksapi.CodeValidationFailed, "text")
	requireProblem(t, api.call("POST", "/v1/prompts/p/versions", devKey, map[string]any{"text": "x", "extra": 1}), 400, tasksapi.CodeValidationFailed, "extra")
	requireProblem(t, api.call("POST", "/v1/prompts/p/versions", devKey, map[string]any{"text": 7}), 400, tasksapi.CodeValidationFailed, "text")
	requireProblem(t, api.call("POST", "/v1/prompts/p/versions", devKey, `{"text": "x"`), 400, tasksapi.CodeValidationFailed, "")
	requireProblem(t, api.call("POST", "/v1/prompts/Bad_Name/versions", devKey, body), 400, tasksapi.CodeValidationFailed, "name")
	requireProblem(t, api.call("POST", "/v1/prompts/p/versions", devKey, `{"text": "x"}`, "Content-Type", "text/plain"), 415, tasksapi.CodeValidationFailed, "")
	requireProblem(t, api.call("POST", "/v1/prompts/p/versions", devKey, map[string]any{"text": strings.Repeat("x", 300_000)}), 413, tasksapi.CodeValidationFailed, "")
	requireProblem(t, api.call("GET", "/v1/prompts/p", viewKey, nil), 404, tasksapi.CodePromptNotFound, "")
	r = api.call("GET", "/v1/prompts", viewKey, nil)
	require.Len(t, r.JSON["data"].([]any), 1, "no refused prompt was stored")

	// Paths and methods the API does not serve answer problem documents too.
	for _, c := range []struct {
		method, path string
		status       int
	}{{"GET", "/v1/nothing", 404}, {"DELETE", "/v1/prompts", 405}} {
		req, err := http.NewRequest(c.method, api.url+c.path, nil)
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, c.status, resp.StatusCode, "%s", raw)
		require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
		require.Contains(t, string(raw), `"code":`)
	}
}
