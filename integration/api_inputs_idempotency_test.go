package integration

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// Idempotency-Key on a follow-up input: a repeated POST, also through
// another API process (a restart), gets the first receipt and sends no
// second input; another key sends one.
func TestFollowUpInputIdempotencyKey(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	h.model.SetHandler(echoLast)
	api := newAPI(t, h)
	createSeedTask(t, api, seedTask())
	r := api.call("POST", "/v1/tasks/support-reply/run", callKey, map[string]any{"input": "Hello", "variables": map[string]any{"customer": "Amina"}})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	id := r.Header.Get("X-Request-Id")

	follow := map[string]any{"message": []any{map[string]any{"mimeType": "text/plain", "text": "Where is it now?"}}}
	send := func(a *apiServer, key string) reply {
		r := a.call("POST", "/v1/runs/"+id+"/inputs", callKey, follow, "Idempotency-Key", key)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		require.NotEmpty(t, r.data()["received_at"])
		return r
	}
	first := send(api, "follow-1")
	waitOutputs(t, id, 2)
	again := send(api, "follow-1")
	require.JSONEq(t, string(first.Raw), string(again.Raw), "the same receipt")
	restarted := newAPI(t, h) // another API process: nothing of the first is shared but Temporal
	require.JSONEq(t, string(first.Raw), string(send(restarted, "follow-1").Raw))

	inputs := func() (n int, texts []string) {
		r := api.call("GET", "/v1/runs/"+id+"/messages", viewKey, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		for _, m := range r.JSON["data"].([]any) {
			m := m.(map[string]any)
			text := m["message"].([]any)[0].(map[string]any)["text"].(string)
			texts = append(texts, text)
			if m["type"] == "input" && text == "Where is it now?" {
				n++
			}
		}
		return n, texts
	}
	n, texts := inputs()
	require.Equal(t, 1, n, "one follow-up input for three POSTs with one key: %q", texts)
	require.Len(t, texts, 4, "%q", texts)
	require.Equal(t, 2, status(t, id).Outputs, "no second turn")

	// Another key: a second input and turn.
	other := send(api, "follow-2")
	require.NotEqual(t, first.data()["received_at"], other.data()["received_at"])
	waitOutputs(t, id, 3)
	n, texts = inputs()
	require.Equal(t, 2, n, "%q", texts)
	require.Len(t, texts, 6, "%q", texts)
}
