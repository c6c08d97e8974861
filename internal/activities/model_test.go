package activities_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
	"github.com/agenttask/agenttask/internal/llm"
	"github.com/agenttask/agenttask/internal/testmodel"
	"github.com/agenttask/agenttask/internal/transcript"
	"github.com/agenttask/agenttask/internal/workerkit"
)

// The activity runs for real: a transcript on an in-memory bucket and a
// model server over HTTP.

type rig struct {
	env   *testsuite.TestActivityEnvironment
	model *testmodel.Server
	tr    workerkit.TranscriptAdapter
	key   activities.TranscriptKey
}

func newRig(t *testing.T) *rig {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	m := testmodel.Start()
	t.Cleanup(m.Close)
	store, err := transcript.Open(context.Background(), "mem://")
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	r := &rig{env: env, model: m, tr: workerkit.TranscriptAdapter{Store: store}, key: activities.TranscriptKey{TaskID: "t1", FirstRunID: "r1"}}
	acts := &activities.Activities{
		Models:     llm.NewRouter(llm.RouterOptions{Endpoints: map[string]llm.Endpoint{"test": {BaseURL: m.URL}}}),
		Transcript: r.tr,
	}
	env.RegisterActivity(acts.ModelTurn)
	return r
}

func input(pos int, text, committedAt string) activities.PositionedEntry {
	in := contract.TaskIO{Message: []contract.ContentPart{contract.TextPart(text)}, ReceivedAt: committedAt, CommittedAt: committedAt}
	return activities.PositionedEntry{Position: pos, Entry: contract.Message{Type: contract.TypeInput, TaskIO: in}}
}

func (r *rig) turn(t *testing.T, in activities.ModelTurnInput) (*activities.ModelTurnResult, error) {
	in.Transcript = r.key
	v, err := r.env.ExecuteActivity("ModelTurn", in)
	if err != nil {
		return nil, err
	}
	var res activities.ModelTurnResult
	require.NoError(t, v.Get(&res))
	return &res, nil
}

func TestModelTurnReadsTheWindowFromTheTranscript(t *testing.T) {
	r := newRig(t)
	spec := contract.AgentSpec{Name: "a", Model: "test/echo", Instructions: "Be brief.", MaxTokens: 50}
	res, err := r.turn(t, activities.ModelTurnInput{TurnContext: &activities.TurnContext{Agent: spec}, Turn: 1, End: 1,
		Entries: activities.Entries{Write: []activities.PositionedEntry{input(0, "first", "2026-11-29T10:00:00.000000Z")}}})
	require.NoError(t, err)
	require.Equal(t, "echo: first", *res.Output.Message[0].Text)
	require.Equal(t, "end", res.StopReason)
	require.Empty(t, res.Output.CommittedAt, "the workflow stamps the output")

	// Turn 2 carries only the new input and a stamp for output 1; the model
	// still sees the whole conversation, read from the transcript.
	_, err = r.turn(t, activities.ModelTurnInput{TurnContext: &activities.TurnContext{Agent: spec}, Turn: 2, End: 3, Entries: activities.Entries{
		Stamps: []activities.OutputStamp{{Position: 1, Turn: 1, CommittedAt: "2026-11-29T10:00:01.000000Z"}},
		Write:  []activities.PositionedEntry{input(2, "second", "2026-11-29T10:00:02.000000Z")},
	}})
	require.NoError(t, err)
	call := r.model.Calls()[1]
	require.Equal(t, []testmodel.Message{
		{Role: "system", Content: "Be brief."},
		{Role: "user", Content: "first"},
		{Role: "assistant", Content: "echo: first"},
		{Role: "user", Content: "second"},
	}, call.Messages)
	require.Equal(t, 50, call.MaxTokens)
	stored, err := r.tr.Read(context.Background(), r.key, 0, 3)
	require.NoError(t, err)
	require.Equal(t, "2026-11-29T10:00:01.000000Z", stored[1].CommittedAt, "output 1 stamped in the transcript")

	// A retry of the same turn is idempotent.
	_, err = r.turn(t, activities.ModelTurnInput{TurnContext: &activities.TurnContext{Agent: spec}, Turn: 2, End: 3, Entries: activities.Entries{
		Stamps: []activities.OutputStamp{{Position: 1, Turn: 1, CommittedAt: "2026-11-29T10:00:01.000000Z"}},
		Write:  []activities.PositionedEntry{input(2, "second", "2026-11-29T10:00:02.000000Z")},
	}})
	require.NoError(t, err)
}

func TestModelTurnWindowsToTheContext(t *testing.T) {
	r := newRig(t)
	var write []activities.PositionedEntry
	for i := 0; i < 50; i++ {
		write = append(write, input(i, strings.Repeat("w", 400), "2026-11-29T10:00:00.000000Z"))
	}
	spec := contract.AgentSpec{Name: "a", Model: "test/echo", ContextTokens: 2000, MaxTokens: 100}
	res, err := r.turn(t, activities.ModelTurnInput{TurnContext: &activities.TurnContext{Agent: spec}, Turn: 1, End: 50, TurnFrom: 49, Entries: activities.Entries{Write: write}})
	require.NoError(t, err)
	require.Greater(t, res.WindowFrom, 0, "older entries fall out of the window")
	call := r.model.Calls()[0]
	total := 0
	for _, m := range call.Messages {
		total += len(m.Content)
	}
	require.LessOrEqual(t, total, spec.ContextBudgetBytes())
	require.Equal(t, strings.Repeat("w", 400), call.Messages[len(call.Messages)-1].Content, "the newest input is always shown")
}

func TestModelTurnRetriesAStructuredAnswerThatDoesNotFit(t *testing.T) {
	r := newRig(t)
	answers := []string{`not json`, `{"message":"hi","priority":"urgent"}`, `{"message":"hi","priority":"high"}`}
	r.model.SetHandler(func(c testmodel.Call) testmodel.Reply { return testmodel.Reply{Text: answers[c.Seq-1]} })
	spec := contract.AgentSpec{Name: "a", Model: "test/echo", Exposes: json.RawMessage(`{"type":"object","properties":{"priority":{"type":"string","enum":["low","high"]}},"required":["priority"]}`)}
	res, err := r.turn(t, activities.ModelTurnInput{TurnContext: &activities.TurnContext{Agent: spec}, Turn: 1, End: 1,
		Entries: activities.Entries{Write: []activities.PositionedEntry{input(0, "hi", "2026-11-29T10:00:00.000000Z")}}})
	require.NoError(t, err)
	require.Equal(t, 3, res.Calls)
	require.JSONEq(t, `"high"`, string(res.Output.Values["priority"]))
	require.Equal(t, "hi", *res.Output.Message[0].Text)
	calls := r.model.Calls()
	require.NotNil(t, calls[0].JSONSchema, "structured output requested")
	last := calls[2].Messages[len(calls[2].Messages)-1].Content
	require.Contains(t, last, "/priority", "the violation goes back to the model by path")
}

func TestModelTurnErrors(t *testing.T) {
	r := newRig(t)
	spec := contract.AgentSpec{Name: "a", Model: "test/echo"}
	in := activities.ModelTurnInput{TurnContext: &activities.TurnContext{Agent: spec}, Turn: 1, End: 1,
		Entries: activities.Entries{Write: []activities.PositionedEntry{input(0, "hi", "2026-11-29T10:00:00.000000Z")}}}

	r.model.SetHandler(func(testmodel.Call) testmodel.Reply {
		return testmodel.Reply{Status: 400, ErrorMessage: "unsupported parameter"}
	})
	_, err := r.turn(t, in)
	var ae *temporal.ApplicationError
	require.True(t, errors.As(err, &ae))
	require.Equal(t, contract.ErrModel, ae.Type())
	require.True(t, ae.NonRetryable(), "a 400 no retry can fix ends the task at once")

	r.model.SetHandler(func(testmodel.Call) testmodel.Reply { return testmodel.Reply{Status: 401, ErrorMessage: "bad key"} })
	_, err = r.turn(t, in)
	require.True(t, errors.As(err, &ae))
	require.False(t, ae.NonRetryable(), "a 401 is waited out: keys get rotated")

	r.model.SetHandler(func(testmodel.Call) testmodel.Reply { return testmodel.Reply{Status: 500, ErrorMessage: "boom"} })
	_, err = r.turn(t, in)
	require.True(t, errors.As(err, &ae))
	require.False(t, ae.NonRetryable(), "5xx is retried by the activity's retry policy")

	r.model.SetHandler(func(testmodel.Call) testmodel.Reply {
		return testmodel.Reply{Text: "cut", FinishReason: "length"}
	})
	res, err := r.turn(t, in)
	require.NoError(t, err)
	require.Equal(t, "max_tokens", res.StopReason)

	r.model.SetHandler(func(testmodel.Call) testmodel.Reply { return testmodel.Reply{Refusal: "no"} })
	res, err = r.turn(t, in)
	require.NoError(t, err)
	require.Equal(t, "refused", res.StopReason)
}

// An answer over one inline part (100,000 bytes) on an agent without a
// mount is neither split nor cut (docs/content.md): it is refused, and the model
// is told its size and the limit and asked again for a shorter answer.
// The oversized answer is not sent back: a placeholder stands in for it.
func TestALongAnswerWithoutAMountIsAskedAgainShorter(t *testing.T) {
	r := newRig(t)
	long := strings.Repeat("é", 60_000) // 120,000 bytes
	r.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		if c.Seq == 1 {
			return testmodel.Reply{Text: long}
		}
		return testmodel.Reply{Text: "the short answer"}
	})
	res, err := r.turn(t, activities.ModelTurnInput{TurnContext: &activities.TurnContext{Agent: contract.AgentSpec{Name: "a", Model: "test/echo"}}, Turn: 1, End: 1,
		Entries: activities.Entries{Write: []activities.PositionedEntry{input(0, "hi", "2026-11-29T10:00:00.000000Z")}}})
	require.NoError(t, err)
	require.Equal(t, 2, res.Calls, "the long answer was taken")
	require.Len(t, res.Output.Message, 1)
	require.Equal(t, "the short answer", *res.Output.Message[0].Text)
	calls := r.model.Calls()
	require.Len(t, calls, 2)
	second := calls[1].Messages
	correction := second[len(second)-1]
	require.Equal(t, "user", correction.Role)
	for _, want := range []string{"120000 bytes", "at most 100000 bytes"} {
		require.Contains(t, correction.Content, want)
	}
	for _, m := range second {
		require.NotContains(t, m.Content, long[:1000], "the oversized answer is not sent back")
	}
}

// Past the turn's bound of calls (3) the turn fails, non-retryably, with a
// MODEL_ERROR naming the limit, the size and what to do; an answer is
// never split into parts. So for a JSON agent's oversized object.
func TestALongAnswerEveryTimeFailsTheTurn(t *testing.T) {
	for name, spec := range map[string]contract.AgentSpec{
		"text": {Name: "a", Model: "test/echo"},
		"json": {Name: "a", Model: "test/echo", JSON: true},
	} {
		t.Run(name, func(t *testing.T) {
			r := newRig(t)
			long := strings.Repeat("x", 100_001)
			if spec.JSON {
				long = `{"text":"` + strings.Repeat("x", 100_001) + `"}`
			}
			r.model.SetHandler(func(testmodel.Call) testmodel.Reply { return testmodel.Reply{Text: long} })
			res, err := r.turn(t, activities.ModelTurnInput{TurnContext: &activities.TurnContext{Agent: spec}, Turn: 1, End: 1,
				Entries: activities.Entries{Write: []activities.PositionedEntry{input(0, "hi", "2026-11-29T10:00:00.000000Z")}}})
			require.Error(t, err, "taken: %+v", res)
			var ae *temporal.ApplicationError
			require.True(t, errors.As(err, &ae))
			require.Equal(t, contract.ErrModel, ae.Type())
			require.True(t, ae.NonRetryable())
			for _, want := range []string{"100000-byte inline budget", fmt.Sprintf("the last: %d bytes", len(long)), "after 3 calls", "give the agent a mount", "lower its maxTokens"} {
				require.Contains(t, ae.Message(), want)
			}
			require.Len(t, r.model.Calls(), 3)
		})
	}
}

func TestTheNewestInputIsShownEvenOverTheBudget(t *testing.T) {
	r := newRig(t)
	spec := contract.AgentSpec{Name: "a", Model: "test/echo", ContextTokens: 300, MaxTokens: 10}
	big := strings.Repeat("b", 5000)
	_, err := r.turn(t, activities.ModelTurnInput{TurnContext: &activities.TurnContext{Agent: spec}, Turn: 1, End: 1,
		Entries: activities.Entries{Write: []activities.PositionedEntry{input(0, big, "2026-11-29T10:00:00.000000Z")}}})
	require.NoError(t, err)
	msgs := r.model.Calls()[0].Messages
	require.Equal(t, big, msgs[len(msgs)-1].Content)
}

// A retried attempt of a turn whose earlier attempt stored its output (the
// worker died before reporting it) answers with that stored output: the
// transcript holds one answer per turn, whatever the model says the second time.
func TestARetriedTurnAdoptsTheStoredOutput(t *testing.T) {
	r := newRig(t)
	spec := contract.AgentSpec{Name: "a", Model: "test/echo", MaxTokens: 50}
	n := 0
	r.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		n++
		return testmodel.Reply{Text: map[int]string{1: "first answer", 2: "second answer"}[n]}
	})
	in := activities.ModelTurnInput{TurnContext: &activities.TurnContext{Agent: spec}, Turn: 1, End: 1,
		Entries: activities.Entries{Write: []activities.PositionedEntry{input(0, "q", "2026-11-29T10:00:00.000000Z")}}}
	res, err := r.turn(t, in)
	require.NoError(t, err)
	require.Equal(t, "first answer", *res.Output.Message[0].Text)
	res, err = r.turn(t, in)
	require.NoError(t, err)
	require.Equal(t, 2, r.model.CallCount(), "the model was called again")
	require.Equal(t, "first answer", *res.Output.Message[0].Text, "the stored answer is adopted")
}

func TestUsedVariablesKeepsOnlyThoseTheInstructionsName(t *testing.T) {
	vars := map[string]string{"customer": "Amina", "brand": "Duka", "unused": strings.Repeat("x", 1000)}
	got := activities.UsedVariables("Help {{customer}} of {{brand}}; {{customer}} again; {{missing}}.", vars)
	if len(got) != 2 || got["customer"] != "Amina" || got["brand"] != "Duka" {
		t.Fatalf("got %v", got)
	}
	if activities.UsedVariables("no placeholders", vars) != nil {
		t.Fatal("want nil when nothing is used")
	}
}

// The inputs a call commits are shown whatever the window's budget: their
// committed_at is the read receipt (docs/contract.md). Only older entries are left
// out of the window.
func TestModelTurnShowsEveryInputItCommits(t *testing.T) {
	r := newRig(t)
	var write []activities.PositionedEntry
	for i := 0; i < 50; i++ {
		write = append(write, input(i, fmt.Sprintf("%03d", i)+strings.Repeat("w", 397), "2026-11-29T10:00:00.000000Z"))
	}
	spec := contract.AgentSpec{Name: "a", Model: "test/echo", ContextTokens: 2000, MaxTokens: 100}
	// Positions 30 to 49 are this call's inputs: 8,000 bytes, over the
	// window's byte budget for 2,000 tokens.
	require.Less(t, spec.ContextBudgetBytes(), 20*400)
	res, err := r.turn(t, activities.ModelTurnInput{TurnContext: &activities.TurnContext{Agent: spec}, Turn: 1, End: 50, TurnFrom: 30, Entries: activities.Entries{Write: write}})
	require.NoError(t, err)
	require.Equal(t, 30, res.WindowFrom, "the window starts at the first input the call commits")
	call := r.model.Calls()[0]
	var shown []string
	for _, m := range call.Messages {
		if m.Role == "user" {
			shown = append(shown, m.Content[:3])
		}
	}
	var want []string
	for i := 30; i < 50; i++ {
		want = append(want, fmt.Sprintf("%03d", i))
	}
	require.Equal(t, want, shown, "every committed input, in order, and nothing older")
}

// slowWrites is a transcript whose WriteAt of an input, once armed, waits
// for the model to have been asked again (or then fails, with fail set).
type slowWrites struct {
	workerkit.TranscriptAdapter
	model *testmodel.Server
	armed *atomic.Int64 // the calls the model had when armed; 0: not armed
	fail  bool
}

func (s slowWrites) WriteAt(ctx context.Context, k activities.TranscriptKey, pos int, m contract.Message) error {
	before := s.armed.Load()
	if m.Type != contract.TypeInput || before == 0 {
		return s.TranscriptAdapter.WriteAt(ctx, k, pos, m)
	}
	for int64(len(s.model.Calls())) == before {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	if s.fail {
		return errors.New("the bucket is away")
	}
	return s.TranscriptAdapter.WriteAt(ctx, k, pos, m)
}

// The model is asked while the turn's inputs are written (a write that
// waits for the model's call would wait for ever if they ran one after
// the other); the answer is returned only once they are stored, and a
// failed write fails the attempt, retried, without the answer. The second
// turn is measured: the first fills the worker's window of the task (on a
// worker that has none, the window is read back from the store, so the
// writes come first).
func TestModelTurnAsksWhileItsInputsAreWritten(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprintf("fail=%v", fail), func(t *testing.T) {
			r := newRig(t)
			var s testsuite.WorkflowTestSuite
			env := s.NewTestActivityEnvironment()
			armed := &atomic.Int64{}
			acts := &activities.Activities{
				Models:     llm.NewRouter(llm.RouterOptions{Endpoints: map[string]llm.Endpoint{"test": {BaseURL: r.model.URL}}}),
				Transcript: slowWrites{TranscriptAdapter: r.tr, model: r.model, armed: armed, fail: fail},
			}
			env.RegisterActivity(acts.ModelTurn)
			spec := contract.AgentSpec{Name: "a", Model: "test/echo", Instructions: "Be brief.", MaxTokens: 50}
			_, err := env.ExecuteActivity("ModelTurn", activities.ModelTurnInput{TurnContext: &activities.TurnContext{Transcript: r.key, Agent: spec}, Turn: 1, End: 1,
				Entries: activities.Entries{Write: []activities.PositionedEntry{input(0, "first", "2026-11-29T10:00:00.000000Z")}}})
			require.NoError(t, err)

			armed.Store(int64(len(r.model.Calls())))
			in := activities.ModelTurnInput{TurnContext: &activities.TurnContext{Transcript: r.key, Agent: spec}, Turn: 2, End: 3, Entries: activities.Entries{
				Stamps: []activities.OutputStamp{{Position: 1, Turn: 1, CommittedAt: "2026-11-29T10:00:01.000000Z"}},
				Write:  []activities.PositionedEntry{input(2, "second", "2026-11-29T10:00:02.000000Z")}}}
			done := make(chan error, 1)
			var res activities.ModelTurnResult
			go func() {
				v, err := env.ExecuteActivity("ModelTurn", in)
				if err == nil {
					err = v.Get(&res)
				}
				done <- err
			}()
			select {
			case err = <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("the turn waited for its writes before asking the model")
			}
			require.Len(t, r.model.Calls(), 2)
			_, rerr := r.tr.Read(context.Background(), r.key, 2, 3)
			if fail {
				var ae *temporal.ApplicationError
				require.ErrorAs(t, err, &ae)
				require.False(t, ae.NonRetryable(), "a storage fault is retried")
				require.Contains(t, err.Error(), "writing entry 2")
				require.Error(t, rerr, "the input was not stored")
				return
			}
			require.NoError(t, err)
			require.Equal(t, "echo: second", *res.Output.Message[0].Text)
			stored, err := r.tr.Read(context.Background(), r.key, 0, 3)
			require.NoError(t, err)
			require.Equal(t, "second", *stored[2].Message[0].Text)
			require.Equal(t, "2026-11-29T10:00:01.000000Z", stored[1].CommittedAt, "the stamp landed too")
		})
	}
}
