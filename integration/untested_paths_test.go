package integration

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
	"github.com/agenttask/agenttask/internal/testmodel"
)

// Paths nothing else tests end to end: guardrails that read `context`,
// capability conditions, the bounds of already_collected, and the caller's
// variables against collected names.

// ticketInput is a text input carrying the agent's "tier" parameter.
func ticketInput(msg, tier string) map[string]any {
	in := text(msg)
	in["tier"] = tier
	return in
}

// checkInputRuns counts the CheckInput activities a task's history scheduled.
func checkInputRuns(t *testing.T, id string) int {
	t.Helper()
	n := 0
	for _, e := range history(t, id, "") {
		if e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName() == activities.CheckInputName {
			n++
		}
	}
	return n
}

// Guardrails that read `context` run in the CheckInput activity on the
// conversation the task has committed: the same input is accepted while
// the conversation allows it and refused once an output closed the ticket
// (context.output), and an input is refused because of the first input's
// parameter (context.input) in one task and accepted in another.
func TestGuardrailReadsTheConversation(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	spec := agent("ticketer")
	spec["parameters"] = map[string]any{"type": "object", "properties": map[string]any{"tier": map[string]any{"type": "string"}}}
	spec["exposes"] = map[string]any{"type": "object", "properties": map[string]any{"priority": map[string]any{"type": "string"}}}
	spec["guardrails"] = []any{
		map[string]any{"name": "gold-first", "expression": `size(context.input) == 0 || context.input[0].tier == "gold"`,
			"message": "This desk serves tickets opened by gold customers."},
		map[string]any{"name": "open-ticket", "expression": `!context.output.exists(o, has(o.priority) && o.priority == "closed")`,
			"message": "The ticket is closed."},
	}
	// The answer closes the ticket when asked to.
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		if strings.Contains(c.Messages[len(c.Messages)-1].Content, "close it") {
			return testmodel.Reply{Text: `{"message":"closed","priority":"closed"}`}
		}
		return testmodel.Reply{Text: `{"message":"noted","priority":"open"}`}
	})

	// One task: the ticket is opened by a gold customer, then closed.
	id := "guard-context-open"
	startTask(t, h, id, map[string]any{"agent": spec})
	_, err := sendUpdate(t, id, ticketInput("my order is late", "gold"))
	require.NoError(t, err, "nothing committed yet: both guardrails hold")
	waitOutputs(t, id, 1)
	// A silver customer's input passes: the first input was gold's and no
	// output closed the ticket.
	_, err = sendUpdate(t, id, ticketInput("any news?", "silver"))
	require.NoError(t, err, "the conversation allows it")
	waitOutputs(t, id, 2)
	_, err = sendUpdate(t, id, ticketInput("please close it", "gold"))
	require.NoError(t, err)
	waitOutputs(t, id, 3)
	msgs := messages(t, id, nil)
	require.Equal(t, contract.TypeOutput, msgs[5].Type)
	require.Equal(t, "closed", jsonString(t, msgs[5].Values["priority"]), "the last output closed the ticket")

	// The same input as the accepted second one is now refused, by the
	// output the conversation holds.
	_, err = sendUpdate(t, id, ticketInput("any news?", "silver"))
	require.Equal(t, "GUARDRAIL", errType(err), "%v", err)
	require.Contains(t, err.Error(), "The ticket is closed. (guardrail open-ticket)")
	// Sent by signal: counted as refused, never queued.
	before := status(t, id).Rejected
	require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), id, "", "input", ticketInput("hello?", "gold")))
	eventually(t, time.Minute, "the signal's rejection", func() bool { return status(t, id).Rejected == before+1 })
	st := status(t, id)
	require.Equal(t, "GUARDRAIL", st.LastRejection.Type)
	require.Contains(t, st.LastRejection.Message, "(guardrail open-ticket)")
	require.Equal(t, 3, st.Turns)
	require.Len(t, messages(t, id, nil), 6, "neither refused input was queued")
	// Every input went through the arrival activity, text-only as they are.
	require.Equal(t, 5, checkInputRuns(t, id), "five inputs, five CheckInput activities")

	// Another task, opened by a silver customer: its first input is
	// accepted (nothing committed), the next is refused by context.input[0].
	id = "guard-context-silver"
	startTask(t, h, id, map[string]any{"agent": spec})
	_, err = sendUpdate(t, id, ticketInput("my order is late", "silver"))
	require.NoError(t, err)
	waitOutputs(t, id, 1)
	_, err = sendUpdate(t, id, ticketInput("any news?", "gold"))
	require.Equal(t, "GUARDRAIL", errType(err), "%v", err)
	require.Contains(t, err.Error(), "This desk serves tickets opened by gold customers. (guardrail gold-first)")
	require.Len(t, messages(t, id, nil), 2)
}

func jsonString(t *testing.T, v json.RawMessage) string {
	t.Helper()
	var s string
	require.NoError(t, json.Unmarshal(v, &s), "%s", v)
	return s
}

// A capability whose condition is false is not among the tools of the
// model request, and calling it anyway is answered as unavailable; it is
// offered on the calls where its condition holds: "paint" when the turn's
// input asks for a picture (`i`, the same parts again at the turn's later
// call), "escalate" once the conversation holds an output and "followup"
// once it holds two inputs (`context`, which includes the inputs the call
// commits). A capability without a condition is always offered.
func TestCapabilityConditionDecidesWhatIsOffered(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	child := map[string]any{"name": "helper", "model": "test/child"}
	spec := agent("desk")
	spec["capabilities"] = []any{
		map[string]any{"name": "paint", "kind": "delegate", "agent": child,
			"condition": `i.exists(p, has(p.text) && p.text.contains("picture"))`},
		map[string]any{"name": "escalate", "kind": "delegate", "agent": child,
			"condition": `size(context.output) > 0`},
		map[string]any{"name": "followup", "kind": "delegate", "agent": child,
			"condition": `size(context.input) >= 2`},
		map[string]any{"name": "always", "kind": "delegate", "agent": child},
	}
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		switch c.Seq {
		case 1: // calls what it was not offered
			return testmodel.Reply{ToolCalls: []testmodel.ToolCall{{ID: "call_p", Name: "paint", Arguments: `{"message":"paint a cat"}`}}}
		case 3: // a name that is no capability: turn 2 goes on to a second call
			return testmodel.Reply{ToolCalls: []testmodel.ToolCall{{ID: "call_s", Name: "sketch", Arguments: `{}`}}}
		}
		return testmodel.Reply{Text: "answered"}
	})
	id := "conditions"
	startTask(t, h, id, map[string]any{"agent": spec, "input": text("hello")})
	waitOutputs(t, id, 1)
	_, err := sendUpdate(t, id, text("draw me a picture of a cat"))
	require.NoError(t, err)
	waitOutputs(t, id, 2)
	_, err = sendUpdate(t, id, text("hello again"))
	require.NoError(t, err)
	waitOutputs(t, id, 3)

	desk := h.model.Calls()
	for _, c := range desk {
		require.Equal(t, "echo", c.Model, "no sub-task's model was called")
	}
	require.Len(t, desk, 5, "turns 1 and 2 (a refused call, then the answer), turn 3")
	require.Equal(t, []string{"always"}, desk[0].Tools, "turn 1: no picture asked for, no output, one input")
	require.Equal(t, []string{"always"}, desk[1].Tools, "turn 1, second call: the same inputs, the same conditions")
	toolMsg := func(c testmodel.Call, id string) string {
		for _, m := range c.Messages {
			if m.Role == "tool" && m.ToolCallID == id {
				return m.Content
			}
		}
		return ""
	}
	require.Equal(t, `error: the capability "paint" is not available now`, toolMsg(desk[1], "call_p"), "a withheld capability is not run")
	require.Equal(t, []string{"paint", "escalate", "followup", "always"}, desk[2].Tools,
		"turn 2: a picture is asked for, an output exists, and the input this call commits is the second")
	require.Equal(t, `error: the capability "sketch" is not available now`, toolMsg(desk[3], "call_s"))
	require.Equal(t, []string{"paint", "escalate", "followup", "always"}, desk[3].Tools, "turn 2, second call: `i` is the turn's input again")
	require.Equal(t, []string{"escalate", "followup", "always"}, desk[4].Tools, "turn 3: no picture asked for")
	for _, c := range desk {
		var offered []string
		var req struct {
			Tools []struct {
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			} `json:"tools"`
		}
		require.NoError(t, json.Unmarshal(c.Raw, &req))
		for _, tl := range req.Tools {
			offered = append(offered, tl.Function.Name)
		}
		require.Equal(t, c.Tools, offered, "call %d: the request's own tools", c.Seq)
	}
	_, err = sdk.DescribeWorkflowExecution(ctxT(t, 5*time.Second), id+".paint.t1.c0", "")
	require.Error(t, err, "no sub-task was started for the withheld capability")
}

// already_collected in a model request shows only the last 12 collected
// values, each cut at 120 characters (characters, not bytes) and ending
// in … when cut; a list as its length and first item.
func TestAlreadyCollectedShowsTheLastTwelveCut(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	props := map[string]any{}
	values := map[string]any{}
	for k := 1; k <= 14; k++ {
		name := fmt.Sprintf("k%02d", k)
		props[name] = map[string]any{"type": "string"}
		values[name] = fmt.Sprintf("value %02d ", k) + strings.Repeat("z", 290) // 299 characters
	}
	values["k03"] = strings.Repeat("é", 120) // 120 characters, 240 bytes: whole
	values["k04"] = strings.Repeat("x", 121) // 121 characters: cut
	values["k05"] = "short"
	props["k06"] = map[string]any{"type": "array", "items": map[string]any{"type": "string"}}
	values["k06"] = []any{"first item", "second item"}
	answer, err := json.Marshal(map[string]any{"message": "collected", "k01": values["k01"], "k02": values["k02"], "k03": values["k03"],
		"k04": values["k04"], "k05": values["k05"], "k06": values["k06"], "k07": values["k07"], "k08": values["k08"], "k09": values["k09"],
		"k10": values["k10"], "k11": values["k11"], "k12": values["k12"], "k13": values["k13"], "k14": values["k14"]})
	require.NoError(t, err)
	spec := agent("hoarder")
	spec["exposes"] = map[string]any{"type": "object", "properties": props}
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		return testmodel.Reply{Text: string(answer)}
	})
	id := "recall-bounds"
	startTask(t, h, id, map[string]any{"agent": spec, "input": text("collect")})
	waitOutputs(t, id, 1)
	_, err = sendUpdate(t, id, text("and now?"))
	require.NoError(t, err)
	waitOutputs(t, id, 2)

	// The task holds all 14.
	v, err := sdk.QueryWorkflow(ctxT(t, 10*time.Second), id, "", "collected")
	require.NoError(t, err)
	var collected []struct{ Name string }
	require.NoError(t, v.Get(&collected))
	require.Len(t, collected, 14)

	calls := h.model.Calls()
	require.Len(t, calls, 2)
	for _, m := range calls[0].Messages {
		require.NotContains(t, m.Content, "already_collected", "nothing collected before the first answer")
	}
	recall := recalled(t, calls[1])
	var names []string
	for _, r := range recall {
		names = append(names, r.Name)
	}
	require.Equal(t, []string{"k03", "k04", "k05", "k06", "k07", "k08", "k09", "k10", "k11", "k12", "k13", "k14"}, names,
		"the last 12, oldest first; k01 and k02 are not shown")
	byName := map[string]string{}
	for _, r := range recall {
		byName[r.Name] = r.Value
		require.LessOrEqual(t, len([]rune(r.Value)), 120, r.Name)
	}
	require.Equal(t, values["k03"], byName["k03"], "120 characters are shown whole, whatever their bytes")
	require.Equal(t, strings.Repeat("x", 119)+"…", byName["k04"], "121 characters are cut to 119 and …")
	require.Equal(t, "short", byName["k05"])
	require.Equal(t, "2 items; first: first item", byName["k06"])
	for k := 7; k <= 14; k++ {
		name := fmt.Sprintf("k%02d", k)
		want := []rune(values[name].(string))[:119]
		require.Equal(t, string(want)+"…", byName[name], name)
	}
	// Nothing of the two oldest is in the recall (the conversation still
	// holds the output that exposed them).
	for _, m := range calls[1].Messages {
		if strings.HasPrefix(m.Content, `<untrusted_data label="already_collected">`) {
			require.NotContains(t, m.Content, "value 01 ")
			require.NotContains(t, m.Content, "value 02 ")
		}
	}
}

// {{name}} in the instructions is filled from the collected values and the
// caller's variables; on a clash the caller's variables win, whether the
// value was collected from the start argument or by an output since; a
// secret's placeholder reads [secret] even when a collected value has its
// name; a collected name no variable has fills its placeholder.
func TestCallersVariablesWinOverCollectedNames(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	const secret = "tok-7f3a9c1e55d0b2-secret"
	spec := agent("filler")
	spec["instructions"] = "Serve {{customer}} in {{city}} ({{region}}); key {{token}}; unknown {{nobody}}."
	spec["exposes"] = map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		return testmodel.Reply{Text: `{"message":"noted","city":"Kisumu-exposed"}`}
	})
	id := "variables-win"
	startTask(t, h, id, map[string]any{"agent": spec, "input": text("hello"),
		"variables": map[string]any{"customer": "Amina", "city": "Nairobi-variable", "token": secret},
		"secrets":   []any{"token"},
		"collected": map[string]any{"city": "Mombasa-collected", "region": "Coast-collected", "token": "token-collected"}})
	waitOutputs(t, id, 1)
	_, err := sendUpdate(t, id, text("again"))
	require.NoError(t, err)
	waitOutputs(t, id, 2)

	calls := h.model.Calls()
	require.Len(t, calls, 2)
	want := "Serve Amina in Nairobi-variable (Coast-collected); key [secret]; unknown {{nobody}}."
	for i, c := range calls {
		sys := c.Messages[0]
		require.Equal(t, "system", sys.Role)
		require.Contains(t, sys.Content, want, "call %d", i+1)
		for _, lost := range []string{"Mombasa-collected", "Kisumu-exposed", "token-collected", secret} {
			require.NotContains(t, sys.Content, lost, "call %d", i+1)
		}
		require.NotContains(t, string(c.Raw), secret, "call %d: the secret is in no request", i+1)
	}
	// The clashing values were collected all the same: the model sees them
	// as data, and the second request shows the exposed city replaced the
	// start argument's.
	got := map[string]string{}
	for _, r := range recalled(t, calls[1]) {
		got[r.Name] = r.Value
	}
	require.Equal(t, "Kisumu-exposed", got["city"])
	require.Equal(t, "token-collected", got["token"])
	require.Equal(t, "Mombasa-collected", recalledValue(t, calls[0], "city"), "the first request recalls the start argument's city")
}

func recalledValue(t *testing.T, c testmodel.Call, name string) string {
	t.Helper()
	for _, r := range recalled(t, c) {
		if r.Name == name {
			return r.Value
		}
	}
	t.Fatalf("%q is not recalled", name)
	return ""
}
