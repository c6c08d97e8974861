package integration

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/testmodel"
	"github.com/agenttask/agenttask/starter"
)

var citiesSchema = map[string]any{"type": "object", "additionalProperties": false, "required": []any{"cities"},
	"properties": map[string]any{"cities": map[string]any{"type": "array", "minItems": 1, "items": map[string]any{"type": "string"}}}}

// shaper answers shaping calls (the requests whose system prompt prepares a
// result) with the given objects in turn, and other calls as the agent.
func shaper(answers ...string) (testmodel.Handler, *int) {
	n := 0
	return func(c testmodel.Call) testmodel.Reply {
		if len(c.Messages) > 0 && strings.Contains(c.Messages[0].Content, "prepare a task's result") {
			a := answers[min(n, len(answers)-1)]
			n++
			return testmodel.Reply{Text: a}
		}
		return testmodel.Reply{Text: `{"message":"Nairobi and Mombasa","city":"Nairobi"}`}
	}, &n
}

// A test model that answers the shaping pass with an invalid object twice
// and a valid one the third time yields a result, both violation lists sent
// back by path; one that never fits fails with OUTPUT_UNFIT after exactly
// three shaping calls, records intact.
func TestShapingAgainstTheTestModel(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	spec := agent("finder")
	spec["exposes"] = map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}
	args := func() map[string]any {
		return map[string]any{"agent": spec, "input": text("which cities?"), "mode": "single",
			"output": map[string]any{"instructions": "List the cities.", "schema": citiesSchema, "model": "test/shaper"}}
	}

	handler, calls := shaper(`{"towns":["Nairobi"]}`, `{"cities":[]}`, `{"cities":["Nairobi"]}`)
	h.model.SetHandler(handler)
	run := startTask(t, h, "shaped", args())
	var res contract.Result
	require.NoError(t, run.Get(ctxT(t, 60*time.Second), &res))
	require.JSONEq(t, `{"cities":["Nairobi"]}`, string(res.Result))
	require.Equal(t, 3, *calls)
	recordHistory(t, "shaped", run.GetRunID(), "output-shaped-on-third-attempt")
	var shapingCalls []testmodel.Call
	for _, c := range h.model.Calls() {
		if strings.Contains(c.Messages[0].Content, "prepare a task's result") {
			shapingCalls = append(shapingCalls, c)
		}
	}
	require.Len(t, shapingCalls, 3)
	second, third := shapingCalls[1].Messages, shapingCalls[2].Messages
	require.Contains(t, second[len(second)-1].Content, "/", "violations by path")
	require.Contains(t, second[len(second)-1].Content, "cities")
	require.Contains(t, third[len(third)-1].Content, "/cities")
	require.Contains(t, shapingCalls[0].Messages[1].Content, "Nairobi", "the saved values are shaped")
	require.Contains(t, shapingCalls[0].Messages[1].Content, "untrusted_data")

	handler, calls = shaper(`{"towns":[]}`)
	h.model.SetHandler(handler)
	run = startTask(t, h, "unfit", args())
	err := run.Get(ctxT(t, 60*time.Second), nil)
	require.Equal(t, "OUTPUT_UNFIT", errType(err), "%v", err)
	require.Equal(t, 3, *calls, "exactly three shaping calls")
	var ae *temporal.ApplicationError
	require.True(t, errors.As(err, &ae))
	var details map[string]json.RawMessage
	require.NoError(t, ae.Details(&details))
	require.Contains(t, string(details["records"]), "Nairobi", "records intact")
	recordHistory(t, "unfit", run.GetRunID(), "output-unfit")
}

// A secret's value appears in no model request, no log line of the worker
// and no history payload written after the start.
func TestSecretsNeverLeak(t *testing.T) {
	h := newHarness(t)
	const secret = "sk-live-7f3a9c1e55d0b2"
	var logs bytes.Buffer
	proc := startWorkerProcessLogging(t, h, &logs)
	_ = proc
	handler, _ := shaper(`{"cities":["Nairobi"]}`)
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		if c.Seq == 1 {
			return testmodel.Reply{ToolCalls: []testmodel.ToolCall{{ID: "s", Name: "save", Arguments: `{"name":"note","value":"called with a key"}`}}}
		}
		return handler(c)
	})
	spec := agent("keeper")
	spec["instructions"] = "Help {{user}}. The API key is {{api_key}}."
	spec["exposes"] = map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}
	run := startTask(t, h, "secretive", map[string]any{"agent": spec, "input": text("go"), "mode": "single",
		"variables": map[string]any{"user": "Amina", "api_key": secret}, "secrets": []any{"api_key"},
		"output": map[string]any{"instructions": "List the cities.", "schema": citiesSchema, "model": "test/shaper"}})
	var res contract.Result
	require.NoError(t, run.Get(ctxT(t, 60*time.Second), &res))
	calls := h.model.Calls()
	require.GreaterOrEqual(t, len(calls), 3)
	require.Contains(t, calls[0].Messages[0].Content, "Help Amina", "variables fill the instructions")
	require.Contains(t, calls[0].Messages[0].Content, "[secret]")
	for _, c := range calls {
		require.NotContains(t, string(c.Raw), secret, "model request %d", c.Seq)
	}
	events := history(t, "secretive", run.GetRunID())
	for _, e := range events[1:] { // the start event carries what the caller sent
		b, _ := e.Marshal()
		require.False(t, bytes.Contains(b, []byte(secret)), "event %d (%s)", e.GetEventId(), e.GetEventType())
	}
	stopProcess(proc)
	require.NotEmpty(t, logs.String())
	require.NotContains(t, logs.String(), secret, "worker logs")
	b, _ := json.Marshal(res)
	require.NotContains(t, string(b), secret)
}

// A task whose worker is SIGKILLed mid-way, and which is then rescued, shows
// in its first model request the values it collected before the failure.
func TestRescueRemembersWhatWasCollected(t *testing.T) {
	h := newHarness(t)
	first := startWorkerProcess(t, h)
	spec := agent("collector")
	spec["exposes"] = map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		if c.Seq == 1 {
			return testmodel.Reply{ToolCalls: []testmodel.ToolCall{{ID: "s", Name: "save", Arguments: `{"name":"chat_1","value":"Amina: the order is late"}`}}}
		}
		return testmodel.Reply{Text: `{"message":"read chat 1","city":"Nairobi"}`}
	})
	id := "collector-1"
	run := startTask(t, h, id, map[string]any{"agent": spec, "input": text("read the chats"),
		"output": map[string]any{"instructions": "Summarise the chats.", "model": "test/shaper"}})
	waitOutputs(t, id, 1)

	// Turn 2 is in flight when the worker dies.
	h.model.Hold()
	require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), id, "", "input", text("next chat")))
	require.NoError(t, h.model.WaitForCalls(ctxT(t, time.Minute), 3))
	require.NoError(t, first.Process.Kill())
	_ = first.Wait()
	require.NoError(t, sdk.TerminateWorkflow(ctxT(t, 5*time.Second), id, "", "the worker died; rescuing"))
	h.model.Release()
	require.Error(t, run.Get(ctxT(t, 10*time.Second), nil))

	// A new worker; the task is rescued and remembers.
	startWorkerProcess(t, h)
	before := h.model.CallCount()
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		return testmodel.Reply{Text: `{"message":"continuing","city":"Mombasa"}`}
	})
	newID, err := h.tasks.Rescue(ctxT(t, 30*time.Second), id, nil, starter.StartOptions{TaskID: "collector-2"})
	require.NoError(t, err)
	waitOutputs(t, newID, 1)
	firstRequest := h.model.Calls()[before]
	var all strings.Builder
	for _, m := range firstRequest.Messages {
		all.WriteString(m.Content)
	}
	require.Contains(t, all.String(), "already_collected")
	require.Contains(t, all.String(), "Amina: the order is late", "saved before the failure")
	require.Contains(t, all.String(), "Nairobi", "an exposes value of the old run")
	// The conversation continues: the old entries come first, and the input
	// the killed turn had committed is answered now.
	require.Contains(t, all.String(), "read the chats")
	require.Equal(t, "next chat", firstRequest.Messages[len(firstRequest.Messages)-1].Content)
	msgs := messages(t, newID, nil)
	require.Equal(t, []string{"input", "output", "input", "output"}, types(msgs))
	require.Equal(t, "read the chats", *msgs[0].Message[0].Text)
	require.Equal(t, "continuing", *msgs[3].Message[0].Text)
	requireSeedOrder(t, msgs)
	d, err := sdk.DescribeWorkflowExecution(ctxT(t, 5*time.Second), newID, "")
	require.NoError(t, err)
	require.Contains(t, string(d.GetWorkflowExecutionInfo().GetMemo().GetFields()["rescued_from"].GetData()), id)

	// Resume needs a completed task.
	_, err = h.tasks.Resume(ctxT(t, 10*time.Second), id, contract.TaskIO{Message: []contract.ContentPart{contract.TextPart("x")}}, starter.StartOptions{})
	require.Equal(t, starter.ErrNotResumable, contract.TypeOf(err))
}

// Resume continues a completed conversation with a new input: the old
// entries, then the new ones, and the collected values recalled.
func TestResumeContinuesACompletedConversation(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	spec := agent("resumer")
	spec["exposes"] = map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		return testmodel.Reply{Text: `{"message":"noted ` + c.Messages[len(c.Messages)-1].Content + `","city":"Kisumu"}`}
	})
	old := startTask(t, h, "resume-old", map[string]any{"agent": spec, "input": text("first question"), "mode": "single"})
	require.NoError(t, old.Get(ctxT(t, 30*time.Second), nil))
	_, err := h.tasks.Rescue(ctxT(t, 10*time.Second), "resume-old", nil, starter.StartOptions{})
	require.Equal(t, starter.ErrNotRescuable, contract.TypeOf(err), "a completed task is resumed, not rescued")

	newID, err := h.tasks.Resume(ctxT(t, 30*time.Second), "resume-old", contract.TaskIO{Message: []contract.ContentPart{contract.TextPart("second question")}}, starter.StartOptions{TaskID: "resume-new"})
	require.NoError(t, err)
	var res contract.Result
	require.NoError(t, sdk.GetWorkflow(ctxT(t, 30*time.Second), newID, "").Get(ctxT(t, 30*time.Second), &res))
	msgs := messages(t, newID, nil)
	require.Equal(t, []string{"input", "output", "input", "output"}, types(msgs))
	require.Equal(t, "first question", *msgs[0].Message[0].Text)
	require.Equal(t, "noted second question", *msgs[3].Message[0].Text)
	requireSeedOrder(t, msgs)
	last := h.model.Calls()[h.model.CallCount()-1]
	var all strings.Builder
	for _, m := range last.Messages {
		all.WriteString(m.Content)
	}
	require.Contains(t, all.String(), "first question", "the model sees the old conversation")
	require.Contains(t, all.String(), "Kisumu", "and what it collected")
	recordHistory(t, newID, "", "resumed-conversation")
}
