package activities

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/agenttask/agenttask/contract"
)

// taskQueries answers turn-context as a task does: the contexts it sent,
// by digest; it counts the queries.
type taskQueries struct {
	byDigest map[string]TurnContext
	asked    []string
	fail     error
}

func (q *taskQueries) QueryWorkflow(_ context.Context, _, _, queryType string, args ...any) (converter.EncodedValue, error) {
	if queryType != QueryTurnContext {
		return nil, errors.New("unexpected query " + queryType)
	}
	d := args[0].(string)
	q.asked = append(q.asked, d)
	if q.fail != nil {
		return nil, q.fail
	}
	c, ok := q.byDigest[d]
	if !ok {
		return nil, errors.New("unknown digest")
	}
	p, err := converter.GetDefaultDataConverter().ToPayload(c)
	if err != nil {
		return nil, err
	}
	return encoded{p}, nil
}

// encoded is a query's answer as the client hands it back: a payload.
type encoded struct{ p *commonpb.Payload }

func (e encoded) HasValue() bool { return true }
func (e encoded) Get(v any) error {
	return converter.GetDefaultDataConverter().FromPayload(e.p, v)
}

// resolveIn runs resolveContext inside an activity, as ModelTurn does.
func resolveIn(t *testing.T, a *Activities, in ModelTurnInput) (ModelTurnInput, error) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.RegisterActivityWithOptions(func(ctx context.Context, in ModelTurnInput) (ModelTurnInput, error) {
		out, err := a.resolveContext(ctx, in)
		return out, a.waitOut(ctx, in.Retry, err) // as ModelTurn
	}, activity.RegisterOptions{Name: "Resolve"})
	v, err := env.ExecuteActivity("Resolve", in)
	if err != nil {
		return ModelTurnInput{}, err
	}
	var out ModelTurnInput
	require.NoError(t, v.Get(&out))
	return out, nil
}

func TestAWorkerFillsInTheTurnContextACallNamesByDigest(t *testing.T) {
	c := TurnContext{Transcript: TranscriptKey{TaskID: "t1", FirstRunID: "r1"}, Agent: contract.AgentSpec{Name: "a", Model: "test/echo", Instructions: "Be brief, {{city}}."},
		Variables: map[string]string{"city": "Nairobi"}, Builtins: true}
	whole := ModelTurnInput{TurnContext: &c, Turn: 1, End: 1, Context: c.Digest(), Retry: Retry{Call: "model:t1:r1", Timeout: "24h0m0s"}}
	later := ModelTurnInput{Turn: 2, End: 3, TurnFrom: 2, Context: whole.Context, Retry: Retry{Call: "model:t2:r1", Timeout: "24h0m0s"}}

	// A worker that saw the whole call fills later calls in without asking.
	q := &taskQueries{byDigest: map[string]TurnContext{whole.Context: c}}
	a := &Activities{Queries: q}
	got, err := resolveIn(t, a, whole)
	require.NoError(t, err)
	require.Equal(t, c, *got.TurnContext)
	got, err = resolveIn(t, a, later)
	require.NoError(t, err)
	require.NotNil(t, got.TurnContext)
	require.Equal(t, c, *got.TurnContext)
	require.Equal(t, 2, got.Turn, "the call's own fields stay its own")
	require.Equal(t, "model:t2:r1", got.Call)
	require.Empty(t, q.asked)

	// A worker that did not (a restart, another process) asks the task once.
	b := &Activities{Queries: q}
	for range 2 {
		got, err = resolveIn(t, b, later)
		require.NoError(t, err)
		require.NotNil(t, got.TurnContext)
		require.Equal(t, c, *got.TurnContext)
	}
	require.Equal(t, []string{whole.Context}, q.asked)

	// The task unreachable: an error the retry policy retries.
	q.fail = errors.New("no poller")
	_, err = resolveIn(t, &Activities{Queries: q}, later)
	require.ErrorContains(t, err, "reading the turn context")
	var ae *temporal.ApplicationError
	require.True(t, errors.As(err, &ae))
	require.False(t, ae.NonRetryable(), "retried until the task answers")

	// No client: a clear error, which no retry fixes.
	_, err = resolveIn(t, &Activities{}, later)
	require.ErrorContains(t, err, "no Temporal client")
	require.True(t, errors.As(err, &ae))
	require.True(t, ae.NonRetryable())

	// Older calls name no context and pass as they are.
	old := whole
	old.Context = ""
	got, err = resolveIn(t, &Activities{}, old)
	require.NoError(t, err)
	require.Equal(t, old, got)

	// A call with neither the context nor a digest is refused, not guessed.
	_, err = resolveIn(t, &Activities{Queries: q}, ModelTurnInput{Turn: 2, End: 3})
	require.ErrorContains(t, err, "neither its turn context nor a digest")
	require.True(t, errors.As(err, &ae))
	require.True(t, ae.NonRetryable())
	require.Equal(t, contract.ErrInvalidInput, ae.Type())
}

func TestTurnContextDigestIsStable(t *testing.T) {
	mk := func() TurnContext {
		return TurnContext{Transcript: TranscriptKey{TaskID: "t"}, Variables: map[string]string{"b": "2", "a": "1", "c": "3"}}
	}
	d := mk().Digest()
	for range 20 {
		require.Equal(t, d, mk().Digest(), "map order does not change the digest")
	}
	other := mk()
	other.Variables["a"] = "x"
	require.NotEqual(t, d, other.Digest())
}

// A call carries the context's keys where older calls did, or none of them.
func TestACallByReferenceCarriesNoneOfTheContext(t *testing.T) {
	in := ModelTurnInput{Turn: 2, End: 3, Context: "d"}
	b, err := json.Marshal(in)
	require.NoError(t, err)
	require.JSONEq(t, `{"turn":2,"end":3,"turn_from":0,"context":"d"}`, string(b))

	in.TurnContext = &TurnContext{Transcript: TranscriptKey{TaskID: "t1", FirstRunID: "r1"}, Agent: contract.AgentSpec{Name: "a", Model: "test/echo"}, Builtins: true}
	b, err = json.Marshal(in)
	require.NoError(t, err)
	var keys map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(b, &keys))
	for _, k := range []string{"transcript", "agent", "builtins", "turn", "context"} {
		require.Contains(t, keys, k)
	}

	// An argument of an older history (every call whole, no digest) reads
	// with its context filled.
	var old ModelTurnInput
	require.NoError(t, json.Unmarshal([]byte(`{"transcript":{"task_id":"t1","first_run_id":"r1"},"agent":{"name":"a","model":"test/echo"},"turn":4,"end":7,"builtins":true}`), &old))
	require.NotNil(t, old.TurnContext)
	require.Equal(t, "t1", old.Transcript.TaskID)
	require.True(t, old.Builtins)
	require.Equal(t, 4, old.Turn)
}
