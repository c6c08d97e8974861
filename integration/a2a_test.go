package integration

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/internal/a2apush"
	"github.com/agenttask/agenttask/internal/testmodel"
)

// a2aStep is what the official A2A client saw of one step (integration/a2a/run.mjs).
type a2aStep struct {
	Task    map[string]any   `json:"task"`
	Events  []map[string]any `json:"events"`
	Config  map[string]any   `json:"config"`
	Configs []map[string]any `json:"configs"`
	Error   string           `json:"error"`
}

// webhook records the A2A push notifications it is sent.
type webhook struct {
	url   string
	base  string
	mu    sync.Mutex
	posts []webhookPost
}

type webhookPost struct {
	header http.Header
	body   []byte
}

func startWebhook(t *testing.T) *webhook {
	t.Helper()
	h := &webhook{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet { // /seen?text=...: 200 once a post held it
			h.mu.Lock()
			defer h.mu.Unlock()
			for _, p := range h.posts {
				if strings.Contains(string(p.body), r.URL.Query().Get("text")) {
					return
				}
			}
			w.WriteHeader(http.StatusNotFound)
			return
		}
		body, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.posts = append(h.posts, webhookPost{header: r.Header.Clone(), body: body})
		h.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	h.url = srv.URL + "/a2a-hook"
	h.base = srv.URL
	return h
}

// seen is the URL that answers 200 once a post held text.
func (h *webhook) seen(text string) string {
	return h.base + "/seen?text=" + url.QueryEscape(text)
}

// waitFor waits for a post holding text and returns every post until then.
func (h *webhook) waitFor(t *testing.T, text string) []webhookPost {
	t.Helper()
	var out []webhookPost
	eventually(t, 30*time.Second, "a push notification holding "+text, func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		for i, p := range h.posts {
			if strings.Contains(string(p.body), text) {
				out = append([]webhookPost{}, h.posts[:i+1]...)
				return true
			}
		}
		return false
	})
	return out
}

// runA2AClient drives a stored task's A2A agent with @a2a-js/sdk's client
// (installed by make test-deps from integration/a2a's lockfile).
func runA2AClient(t *testing.T, base, key string, steps []map[string]any) (map[string]any, []a2aStep) {
	t.Helper()
	var seen struct {
		Card  map[string]any `json:"card"`
		Steps []a2aStep      `json:"steps"`
	}
	runNode(t, "a2a", "@a2a-js/sdk", &seen, base, key, jsonOf(steps))
	return seen.Card, seen.Steps
}

func a2aState(task map[string]any) string {
	st, _ := task["status"].(map[string]any)
	s, _ := st["state"].(string)
	return s
}

func a2aArtifactText(task map[string]any) string {
	var b strings.Builder
	arts, _ := task["artifacts"].([]any)
	for _, a := range arts {
		for _, p := range a.(map[string]any)["parts"].([]any) {
			if s, ok := p.(map[string]any)["text"].(string); ok {
				b.WriteString(s)
			}
		}
	}
	return b.String()
}

// The official A2A JavaScript SDK's client (A2A v1.0) reads a stored
// task's agent card, streams a message whose refund needs a person's
// approval (TASK_STATE_INPUT_REQUIRED), answers it on the same task and
// gets the completed task with the answer as its artifact, sends a second
// message in the same context that the model answers knowing the first,
// and cancels a running exchange.
func TestA2AClientRunsAStoredTaskWithAnApproval(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	queue := startRefundsWorker(t)
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		last := c.Messages[len(c.Messages)-1]
		switch {
		case last.Role == "user" && strings.HasPrefix(last.Content, "what did I ask"):
			for _, m := range c.Messages {
				if m.Role == "user" {
					return testmodel.Reply{Text: "you asked: " + m.Content}
				}
			}
		case last.Role == "user" && strings.HasPrefix(last.Content, "medium"):
			return testmodel.Reply{Text: "took a while", Delay: 3 * time.Second}
		case last.Role == "user" && strings.HasPrefix(last.Content, "slow"):
			return testmodel.Reply{Text: "finally", Delay: 30 * time.Second}
		}
		return refundModel(c)
	})
	api := newAPI(t, h)
	r := api.call("POST", "/v1/prompts/refunder/versions", devKey, map[string]any{"text": "You issue refunds."})
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
	refund := refundAgent(queue, map[string]any{"approval": "always"})["capabilities"].([]any)[0]
	r = api.call("POST", "/v1/tasks", devKey, map[string]any{"name": "refunder", "description": "Issues refunds, with a person's approval",
		"prompt": map[string]any{"name": "refunder", "version": 1}, "model": "test/echo", "maxTokens": 400,
		"input": map[string]any{"maxBytes": 2000}, "capabilities": []any{refund}})
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)

	hook := startWebhook(t)
	base := api.url + "/a2a/refunder/"
	card, steps := runA2AClient(t, base, callKey, []map[string]any{
		{"send": "refund o-1 25", "stream": true},
		{"send": "approve", "toTask": true, "stream": true},
		{"send": "what did I ask before?", "inContext": true},
		{"send": "medium one", "inContext": true, "immediately": true},
		{"push": hook.url, "token": "tok-1"},
		{"subscribe": true},
		{"await": hook.seen(`"TASK_STATE_COMPLETED"`)},
		{"pushList": true},
		{"pushGet": true},
		{"pushDelete": true},
		{"pushList": true},
		{"send": "slow one", "inContext": true, "immediately": true},
		{"cancel": true},
		{"get": true},
	})
	require.Equal(t, "refunder", card["name"])
	require.Equal(t, "Issues refunds, with a person's approval", card["description"])
	iface := card["supportedInterfaces"].([]any)[0].(map[string]any)
	require.Equal(t, "JSONRPC", iface["protocolBinding"])
	require.Equal(t, "1.0", iface["protocolVersion"])
	require.Equal(t, base, iface["url"])
	require.Equal(t, "refunder", card["skills"].([]any)[0].(map[string]any)["id"])
	require.NotContains(t, jsonOf(card), "You issue refunds", "never the prompt's text")
	for i, s := range steps {
		require.Empty(t, s.Error, "step %d", i+1)
	}

	// 1. Streamed: the task, then its wait for a person.
	first := steps[0]
	require.GreaterOrEqual(t, len(first.Events), 2)
	require.Contains(t, first.Events[0], "task")
	lastEvent := first.Events[len(first.Events)-1]["statusUpdate"].(map[string]any)
	require.Equal(t, "TASK_STATE_INPUT_REQUIRED", lastEvent["status"].(map[string]any)["state"])
	require.Equal(t, "TASK_STATE_INPUT_REQUIRED", a2aState(first.Task))
	prompt := jsonOf(first.Task["status"].(map[string]any)["message"])
	require.Contains(t, prompt, "refund wants to run with")
	taskID, contextID := first.Task["id"].(string), first.Task["contextId"].(string)
	require.Regexp(t, `^run-[a-z2-7]{26}$`, contextID, "the context is our run")

	// 2. Answered on the same task, streamed: the answer comes as the
	// task's artifact, then the task completes.
	second := steps[1]
	var kinds []string
	for _, e := range second.Events {
		for k := range e {
			kinds = append(kinds, k)
		}
	}
	require.Equal(t, []string{"task", "artifactUpdate", "statusUpdate"}, kinds)
	require.Contains(t, jsonOf(second.Events[1]), `\"status\":\"issued\"`)
	require.Equal(t, taskID, second.Task["id"])
	require.Equal(t, "TASK_STATE_COMPLETED", a2aState(second.Task))
	require.Contains(t, a2aArtifactText(second.Task), `"status":"issued"`)
	require.Equal(t, 1, activityRuns(t, contextID, "IssueRefund"))

	// 3. The same context, the next exchange: the model knows the first.
	third := steps[2]
	require.Equal(t, contextID, third.Task["contextId"])
	require.NotEqual(t, taskID, third.Task["id"])
	require.Equal(t, "TASK_STATE_COMPLETED", a2aState(third.Task))
	require.Equal(t, "you asked: refund o-1 25", a2aArtifactText(third.Task))

	// 4-6. A running exchange, a webhook for it, and SubscribeToTask: the
	// task as it is, then its answer and its end.
	require.Equal(t, "TASK_STATE_WORKING", a2aState(steps[3].Task))
	require.Equal(t, true, card["capabilities"].(map[string]any)["pushNotifications"])
	config := steps[4].Config
	require.Equal(t, steps[3].Task["id"], config["taskId"])
	require.Equal(t, hook.url, config["url"])
	require.NotEmpty(t, config["id"])
	sub := steps[5]
	kinds = nil
	for _, e := range sub.Events {
		for k := range e {
			kinds = append(kinds, k)
		}
	}
	require.Equal(t, []string{"task", "artifactUpdate", "statusUpdate"}, kinds)
	require.Equal(t, steps[3].Task["id"], sub.Events[0]["task"].(map[string]any)["id"])
	require.Equal(t, "TASK_STATE_WORKING", a2aState(sub.Events[0]["task"].(map[string]any)))
	require.Equal(t, "TASK_STATE_COMPLETED", a2aState(sub.Task))
	require.Equal(t, "took a while", a2aArtifactText(sub.Task))

	// The webhook heard the exchange work, then its answer and its end,
	// each post with the caller's token and the operator's signature.
	posts := hook.waitFor(t, `"TASK_STATE_COMPLETED"`)
	require.GreaterOrEqual(t, len(posts), 3)
	require.Contains(t, string(posts[0].body), `"statusUpdate"`)
	require.Contains(t, string(posts[0].body), `"TASK_STATE_WORKING"`)
	require.Contains(t, string(posts[len(posts)-2].body), `"artifactUpdate"`)
	require.Contains(t, string(posts[len(posts)-2].body), "took a while")
	for _, p := range posts {
		require.Equal(t, "tok-1", p.header.Get("X-A2A-Notification-Token"))
		require.Equal(t, "sha256="+a2apush.Sign([]byte(pushSigningKey), p.header.Get("X-Agenttask-Timestamp"), p.body), p.header.Get("X-Agenttask-Signature"))
	}
	// 8-11. The configuration is listed and read back, then deleted.
	require.Len(t, steps[7].Configs, 1)
	require.Equal(t, config["id"], steps[7].Configs[0]["id"])
	require.Equal(t, config["id"], steps[8].Config["id"])
	require.Empty(t, steps[9].Error)
	require.Empty(t, steps[10].Configs)

	// 12-14. A running exchange is canceled.
	require.Equal(t, "TASK_STATE_WORKING", a2aState(steps[11].Task))
	require.Equal(t, "TASK_STATE_CANCELED", a2aState(steps[12].Task))
	require.Equal(t, "TASK_STATE_CANCELED", a2aState(steps[13].Task))

	// An ended task has nothing to follow.
	_, again := runA2AClient(t, base, callKey, []map[string]any{{"send": "what now", "inContext": true}, {"subscribe": true}})
	require.Empty(t, again[0].Error)
	require.Contains(t, again[1].Error, "an ended task has no changes to follow")

	// A key that may only view reads the card but sends nothing.
	req, err := http.NewRequest("POST", base, strings.NewReader(jsonOf(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": map[string]any{"id": taskID}})))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+viewKey)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusForbidden, res.StatusCode)
	card2, _ := runA2AClient(t, base, viewKey, nil)
	require.Equal(t, "refunder", card2["name"])
}
