package tasksapi

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/agenttask/agenttask/internal/definitions"
)

// countingClient answers the store's queries from a map of workflow IDs
// and counts them: the Temporal calls the cache saves. Updates (a task's
// put) replace the answer. Only the calls the store makes here are served.
type countingClient struct {
	client.Client
	mu      sync.Mutex
	answers map[string]any
	queries int
}

type jsonValue struct{ b []byte }

func (v jsonValue) HasValue() bool    { return true }
func (v jsonValue) Get(out any) error { return json.Unmarshal(v.b, out) }

// updateHandle is a completed update's handle.
type updateHandle struct{ v jsonValue }

func (h updateHandle) UpdateID() string   { return "u" }
func (h updateHandle) WorkflowID() string { return "w" }
func (h updateHandle) RunID() string      { return "r" }
func (h updateHandle) Get(_ context.Context, out any) error {
	if out == nil {
		return nil
	}
	return h.v.Get(out)
}

func (c *countingClient) QueryWorkflow(_ context.Context, id, _, _ string, _ ...any) (converter.EncodedValue, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.queries++
	a, ok := c.answers[id]
	if !ok {
		return nil, serviceerror.NewNotFound("no workflow " + id)
	}
	b, _ := json.Marshal(a)
	return jsonValue{b}, nil
}

func (c *countingClient) UpdateWorkflow(_ context.Context, o client.UpdateWorkflowOptions) (client.WorkflowUpdateHandle, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := o.Args[0].(definitions.Change)
	st := definitions.Stored{Definition: ch.Definition, UpdatedBy: ch.By}
	c.answers[o.WorkflowID] = st
	b, _ := json.Marshal(st)
	return updateHandle{jsonValue{b}}, nil
}

func (c *countingClient) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.queries
}

// A prompt version is read from Temporal once; a task once until it is
// written through the cache or its entry expires; a not-found answer is
// never kept.
func TestDefinitionCacheCountsTemporalCalls(t *testing.T) {
	const prefix = "t/"
	fake := &countingClient{answers: map[string]any{
		prefix + "prompt/p/v1": definitions.PromptVersion{Name: "p", Version: 1, Text: "You help {{customer}}."},
		prefix + "task/a":      definitions.Stored{Definition: json.RawMessage(`{"v":1}`)},
	}}
	c := newDefinitionCache(&definitions.Store{C: fake, Queue: "q", Prefix: prefix}, 200*time.Millisecond)
	ctx := context.Background()

	for i := 0; i < 5; i++ {
		v, err := c.GetPromptVersion(ctx, "p", 1)
		require.NoError(t, err)
		require.Equal(t, "You help {{customer}}.", v.Text)
	}
	require.Equal(t, 1, fake.count(), "a prompt version is immutable: one query")
	for i := 0; i < 3; i++ {
		_, err := c.GetPromptVersion(ctx, "p", 2)
		require.Error(t, err)
	}
	require.Equal(t, 4, fake.count(), "a missing version is asked for each time")

	for i := 0; i < 5; i++ {
		st, err := c.GetTask(ctx, "a")
		require.NoError(t, err)
		require.JSONEq(t, `{"v":1}`, string(st.Definition))
	}
	require.Equal(t, 5, fake.count(), "a task: one query while cached")

	// a PUT through the cache: the next read is the new definition
	_, err := c.PutTask(ctx, "a", []byte(`{"v":2}`), "k")
	require.NoError(t, err)
	st, err := c.GetTask(ctx, "a")
	require.NoError(t, err)
	require.JSONEq(t, `{"v":2}`, string(st.Definition))
	require.Equal(t, 6, fake.count())

	// a change made elsewhere (another API process) is seen once the entry expires
	fake.mu.Lock()
	fake.answers[prefix+"task/a"] = definitions.Stored{Definition: json.RawMessage(`{"v":3}`)}
	fake.mu.Unlock()
	st, _ = c.GetTask(ctx, "a")
	require.JSONEq(t, `{"v":2}`, string(st.Definition), "still cached")
	require.Eventually(t, func() bool {
		st, _ := c.GetTask(ctx, "a")
		return strings.Contains(string(st.Definition), "3")
	}, 5*time.Second, 50*time.Millisecond)
}
