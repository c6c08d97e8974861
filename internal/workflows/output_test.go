package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
)

type outputRig struct {
	env        *testsuite.TestWorkflowEnvironment
	turns      []activities.ModelTurnInput
	shapes     []activities.ShapeInput
	answers    []string // Shape answers, in order
	toolRounds [][]activities.ToolCall
	workerOut  string
	final      *activities.ModelTurnResult // the answer, when set
}

func newOutputRig(t *testing.T) *outputRig {
	r := &outputRig{workerOut: "test/shaper"}
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	wf := &Workflows{}
	env.RegisterWorkflowWithOptions(wf.AgentTask, workflow.RegisterOptions{Name: contract.WorkflowType})
	contexts := callContexts{}
	env.RegisterActivityWithOptions(func(ctx context.Context, in activities.ModelTurnInput) (*activities.ModelTurnResult, error) {
		in = contexts.whole(t, in)
		r.turns = append(r.turns, in)
		if len(r.toolRounds) > 0 {
			calls := r.toolRounds[0]
			r.toolRounds = r.toolRounds[1:]
			return &activities.ModelTurnResult{ToolCalls: calls, StopReason: "end"}, nil
		}
		if r.final != nil {
			return r.final, nil
		}
		return &activities.ModelTurnResult{Output: contract.TaskIO{Message: []contract.ContentPart{contract.TextPart("answer")},
			Values: map[string]json.RawMessage{"city": json.RawMessage(`"Nairobi"`)}}, StopReason: "end"}, nil
	}, activity.RegisterOptions{Name: activities.ModelTurnName})
	env.RegisterActivityWithOptions(func(ctx context.Context) (*activities.WorkerDescription, error) {
		return &activities.WorkerDescription{OutputModel: r.workerOut}, nil
	}, activity.RegisterOptions{Name: activities.DescribeWorkerName})
	env.RegisterActivityWithOptions(func(ctx context.Context, in activities.ShapeInput) (*activities.ShapeResult, error) {
		r.shapes = append(r.shapes, in)
		a := r.answers[min(len(r.shapes), len(r.answers))-1]
		res := &activities.ShapeResult{Raw: a}
		if json.Valid([]byte(a)) {
			res.Object = json.RawMessage(a)
		}
		return res, nil
	}, activity.RegisterOptions{Name: activities.ShapeName})
	r.env = env
	return r
}

func shapedAgent() contract.AgentSpec {
	a := agentSpec()
	a.Exposes = json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)
	return a
}

var citySchema = json.RawMessage(`{"type":"object","properties":{"cities":{"type":"array","items":{"type":"string"},"minItems":1}},"required":["cities"],"additionalProperties":false}`)

func TestShapingRetriesWithViolationsThenSucceeds(t *testing.T) {
	r := newOutputRig(t)
	r.answers = []string{`{"towns":["Nairobi"]}`, `{"cities":[]}`, `{"cities":["Nairobi"]}`}
	r.env.ExecuteWorkflow(contract.WorkflowType, StartArgs{StartArgs: contract.StartArgs{Agent: shapedAgent(), Input: textInput("where?"), Mode: contract.ModeSingle,
		Output: &contract.OutputSpec{Instructions: "List the cities.", Schema: citySchema},
	}})
	require.NoError(t, r.env.GetWorkflowError())
	var res contract.Result
	require.NoError(t, r.env.GetWorkflowResult(&res))
	require.JSONEq(t, `{"cities":["Nairobi"]}`, string(res.Result))
	require.Equal(t, []contract.Collected{{Name: "city", Value: json.RawMessage(`"Nairobi"`)}}, res.Records)
	require.Len(t, r.shapes, 3)
	require.Empty(t, r.shapes[0].Violations)
	require.NotEmpty(t, r.shapes[1].Violations, "the first answer's violations go back")
	require.Equal(t, `{"towns":["Nairobi"]}`, r.shapes[1].Previous)
	require.NotEmpty(t, r.shapes[2].Violations, "and the second's")
	require.Equal(t, "/cities", r.shapes[2].Violations[0].Path)
	require.Equal(t, "test/shaper", r.shapes[0].Model, "the worker's default output model, learned by activity")
	require.Contains(t, r.shapes[0].Records, "Nairobi")
}

func TestShapingThatNeverFitsFailsAfterThreeAttempts(t *testing.T) {
	r := newOutputRig(t)
	r.answers = []string{`not json`}
	r.env.ExecuteWorkflow(contract.WorkflowType, StartArgs{StartArgs: contract.StartArgs{Agent: shapedAgent(), Input: textInput("where?"), Mode: contract.ModeSingle,
		Output: &contract.OutputSpec{Instructions: "List the cities.", Schema: citySchema, Model: "test/own"},
	}})
	err := r.env.GetWorkflowError()
	require.Equal(t, contract.ErrOutputUnfit, appErrorType(t, err))
	require.Len(t, r.shapes, 3, "exactly three shaping calls")
	require.Equal(t, "test/own", r.shapes[0].Model)
	var ae *temporal.ApplicationError
	require.True(t, errors.As(err, &ae))
	var details map[string]json.RawMessage
	require.NoError(t, ae.Details(&details))
	require.Contains(t, string(details["records"]), "Nairobi", "the records stay beside the failure")
	require.Contains(t, string(details["violations"]), "not JSON")
}

func TestOutputWithoutAnyModelIsUnavailable(t *testing.T) {
	r := newOutputRig(t)
	r.workerOut = ""
	r.env.ExecuteWorkflow(contract.WorkflowType, StartArgs{StartArgs: contract.StartArgs{Agent: shapedAgent(), Input: textInput("x"), Output: &contract.OutputSpec{Instructions: "i"}}})
	require.Equal(t, contract.ErrOutputUnavailable, appErrorType(t, r.env.GetWorkflowError()))
	require.Empty(t, r.turns, "refused before any model call")
}

func TestOutputSchemaOutsideTheSubsetIsInvalidOutput(t *testing.T) {
	for _, bad := range []string{
		`{"type":"object","properties":{"a":{"type":"string","format":"date"}}}`,
		`{"type":"array"}`,
		`{"type":"object","additionalProperties":{"type":"string"}}`,
		`{"type":"object","properties":{"a":{"type":"array","items":{"type":"object","properties":{"b":{"type":"string","minLength":1}}}}}}`,
	} {
		r := newOutputRig(t)
		r.env.ExecuteWorkflow(contract.WorkflowType, StartArgs{StartArgs: contract.StartArgs{Agent: agentSpec(), Output: &contract.OutputSpec{Instructions: "i", Schema: json.RawMessage(bad)}}})
		err := r.env.GetWorkflowError()
		require.Equal(t, contract.ErrInvalidOutput, appErrorType(t, err), bad)
		require.Contains(t, err.Error(), "output.schema", "names the path")
	}
}

func TestSaveAndFinishThenShape(t *testing.T) {
	r := newOutputRig(t)
	r.answers = []string{`{"cities":["Nairobi","Mombasa"]}`}
	r.toolRounds = [][]activities.ToolCall{
		{{ID: "1", Name: "save", Arguments: `{"name":"port","value":"Mombasa"}`}},
		{{ID: "2", Name: "finish", Arguments: `{}`}},
	}
	agent := shapedAgent()
	agent.Instructions = "Help {{user}} (token {{token}}); earlier: {{earlier}}."
	r.env.ExecuteWorkflow(contract.WorkflowType, StartArgs{StartArgs: contract.StartArgs{Agent: agent, Input: textInput("find cities"),
		Variables: map[string]json.RawMessage{"user": json.RawMessage(`"Amina"`), "token": json.RawMessage(`"s3cr3t-value"`),
			"unused": json.RawMessage(`"named by no placeholder"`)},
		Secrets:   []string{"token"},
		Collected: map[string]json.RawMessage{"earlier": json.RawMessage(`"from the last run"`)},
		Output:    &contract.OutputSpec{Instructions: "List the cities.", Schema: citySchema},
	}})
	require.NoError(t, r.env.GetWorkflowError())
	var res contract.Result
	require.NoError(t, r.env.GetWorkflowResult(&res))
	require.Equal(t, contract.EndedByFinish, res.EndedBy)
	require.Len(t, r.turns, 3, "save, finish, then the answer")
	require.True(t, r.turns[0].Builtins)
	require.Equal(t, []activities.Recalled{{Name: "earlier", Value: "from the last run"}}, r.turns[0].Recall, "recalled from the start")
	require.Equal(t, "Mombasa", r.turns[1].Recall[len(r.turns[1].Recall)-1].Value, "saved values are recalled on the next call")
	require.Equal(t, "Amina", r.turns[0].Variables["user"])
	require.Equal(t, "from the last run", r.turns[0].Variables["earlier"], "collected values are variables")
	require.NotContains(t, r.turns[0].Variables, "unused", "only what the instructions name travels to the model call")
	require.Equal(t, []string{"token"}, r.turns[0].Secrets)
	for _, in := range r.turns {
		b, _ := json.Marshal(in)
		require.NotContains(t, string(b), "s3cr3t-value", "a secret never reaches an activity")
	}
	for _, in := range r.shapes {
		b, _ := json.Marshal(in)
		require.NotContains(t, string(b), "s3cr3t-value")
	}
	names := []string{}
	for _, c := range res.Records {
		names = append(names, c.Name)
	}
	require.Equal(t, []string{"earlier", "port", "city"}, names)
}

func TestSecretsAreNotCarriedAcrossContinueAsNew(t *testing.T) {
	m := &fakeModel{}
	env := newEnv(t, m)
	saved := historyLength
	defer func() { historyLength = saved }()
	historyLength = func(workflow.Context) int { return 10 * len(m.calls) }
	for i := 0; i < 12; i++ {
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(contract.SignalInput, textInput("m")) }, time.Duration(i+1)*time.Minute)
	}
	env.ExecuteWorkflow(contract.WorkflowType, StartArgs{StartArgs: contract.StartArgs{Agent: agentSpec(), ContinueAsNewEvents: 100,
		Variables: map[string]json.RawMessage{"token": json.RawMessage(`"s3cr3t-value"`)}, Secrets: []string{"token"},
	}})
	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(env.GetWorkflowError(), &can))
	var raw []byte
	for _, p := range can.Input.GetPayloads() {
		raw = append(raw, p.GetData()...)
	}
	require.NotContains(t, string(raw), "s3cr3t-value")
	var next StartArgs
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.Equal(t, []string{"token"}, next.Secrets)
	require.NotEmpty(t, next.Carry.SecretPrints)

	// The next run saves what it is given masked all the same: save (and
	// every record) goes through mask, which uses the prints now.
	nextRun := &task{args: next, durable: next.Carry, rules: rulesFor(rulesBounds)}
	require.Equal(t, `{"tool said":"[secret] ok"}`, nextRun.secrets().mask(`{"tool said":"s3cr3t-value ok"}`))
	_ = strings.Contains
	_ = mock.Anything
}

func TestSavedValuesAreMaskedWhenSaved(t *testing.T) {
	r := newOutputRig(t)
	r.answers = []string{`{"cities":["x"]}`}
	secret := `a"b&c<d>`
	r.toolRounds = [][]activities.ToolCall{{{ID: "1", Name: "save", Arguments: `{"name":"leak","value":"the key is a\"b&c<d>"}`}}}
	r.env.ExecuteWorkflow(contract.WorkflowType, StartArgs{StartArgs: contract.StartArgs{Agent: shapedAgent(), Input: textInput("go"), Mode: contract.ModeSingle,
		Variables: map[string]json.RawMessage{"k": json.RawMessage(`"a\"b&c<d>"`)}, Secrets: []string{"k"},
		Output: &contract.OutputSpec{Instructions: "i", Schema: citySchema},
	}})
	require.NoError(t, r.env.GetWorkflowError())
	var res contract.Result
	require.NoError(t, r.env.GetWorkflowResult(&res))
	b, _ := json.Marshal(res)
	require.NotContains(t, string(b), `a\"b&c`)
	require.Contains(t, string(b), "[secret]")
	for _, in := range append([]any{}, r.turns[len(r.turns)-1], r.shapes[0]) {
		b, _ := json.Marshal(in)
		require.NotContains(t, string(b), `a\"b`, "activity arguments")
		require.NotContains(t, string(b), secret)
	}
}

func TestBuiltinNamesAreReserved(t *testing.T) {
	spec := agentSpec()
	spec.Capabilities = []contract.Capability{{Name: "finish", Kind: contract.CapabilityDelegate, Agent: &contract.AgentSpec{Name: "b", Model: "t/m"}}}
	_, err := CheckStart(&StartArgs{StartArgs: contract.StartArgs{Agent: spec}})
	require.Error(t, err)
	require.Contains(t, err.Error(), "built-in")
}

// On rulesLargeState, a model call is asked to keep large values by
// reference; a save it stored is collected as its preview and reference, a
// save over MaxSavedValueBytes is refused naming the limit, an exposes value
// it stored is collected by reference, already_collected shows previews cut
// to 120 characters, and the shaping pass is told where the values are.
func TestLargeSavedValuesAreKeptByReference(t *testing.T) {
	r := newOutputRig(t)
	r.answers = []string{`{"cities":["x"]}`}
	ref := func(c byte) activities.ValueRef {
		sum := strings.Repeat(string(c), 64)
		return activities.ValueRef{Stash: "value-" + sum, Bytes: 20_002, SHA256: sum}
	}
	preview, _ := json.Marshal(strings.Repeat("b", activities.PreviewChars-1) + "…")
	bigArgs, _ := json.Marshal(map[string]any{"name": "big", "value": json.RawMessage(preview), "value_ref": ref('a')})
	r.toolRounds = [][]activities.ToolCall{{
		{ID: "1", Name: "save", Arguments: string(bigArgs)},
		{ID: "2", Name: "save", Arguments: `{"name":"huge","value_bytes":300002}`},
	}}
	report := strings.Repeat("r", 10_000)
	reportJSON, _ := json.Marshal(report)
	r.final = &activities.ModelTurnResult{Output: contract.TaskIO{Message: []contract.ContentPart{contract.TextPart("done")},
		Values: map[string]json.RawMessage{"city": json.RawMessage(`"Nairobi"`), "report": reportJSON}},
		StopReason: "end", ValueRefs: map[string]activities.ValueRef{"report": ref('c')}}
	r.env.ExecuteWorkflow(contract.WorkflowType, StartArgs{StartArgs: contract.StartArgs{Agent: shapedAgent(), Input: textInput("go"), Mode: contract.ModeSingle,
		Output: &contract.OutputSpec{Instructions: "i", Schema: citySchema},
	}})
	require.NoError(t, r.env.GetWorkflowError())
	var res contract.Result
	require.NoError(t, r.env.GetWorkflowResult(&res))

	require.Len(t, r.turns, 2)
	for _, in := range r.turns {
		require.NotNil(t, in.LargeValues, "every model call is asked to store large values")
	}
	var contents []string
	for _, m := range r.turns[1].Scratch {
		if m.ToolCallID != "" {
			contents = append(contents, m.Content)
		}
	}
	require.Equal(t, "saved big (20002 bytes, kept whole)", contents[0])
	require.Contains(t, contents[1], "error: the value is 300002 bytes; one value holds at most 262144 bytes (256 KiB)")
	require.Len(t, r.turns[1].Recall, 1)
	require.Equal(t, "big", r.turns[1].Recall[0].Name)
	require.Len(t, []rune(r.turns[1].Recall[0].Value), recallChars)
	require.True(t, strings.HasSuffix(r.turns[1].Recall[0].Value, "…"))

	a, c := ref('a'), ref('c')
	reportPreview, _ := json.Marshal(report[:activities.PreviewChars-1] + "…")
	require.Equal(t, []contract.Collected{
		{Name: "big", Value: preview, Ref: &a},
		{Name: "city", Value: json.RawMessage(`"Nairobi"`)},
		{Name: "report", Value: reportPreview, Ref: &c},
	}, res.Records, "values by reference are their previews and references")
	b, _ := json.Marshal(res.Records)
	require.Less(t, len(b), 4_000, "the records hold no whole value (last_output is the output, whole)")
	require.Len(t, r.shapes, 1)
	require.NotNil(t, r.shapes[0].Stash, "the shaping pass reads the values whole")
	require.Contains(t, r.shapes[0].Records, `"ref":{"stash":"value-cccc`)
}
