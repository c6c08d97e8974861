package workflows

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/converter"

	"github.com/agenttask/agenttask/internal/activities"

	"github.com/agenttask/agenttask/contract"
)

// DecodeStart reads and checks the start argument. The workflow calls it in
// its first workflow task; the starter calls it before starting, so Go
// callers get the same refusal synchronously.
func DecodeStart(raw converter.RawValue) (*StartArgs, *contract.Agent, error) {
	return decodeStart(raw, latestRules)
}

// decodeStart is DecodeStart under the rules of a run.
func decodeStart(raw converter.RawValue, rules rules) (*StartArgs, *contract.Agent, error) {
	data, err := payloadJSON(raw)
	if err != nil {
		return nil, nil, contract.Invalid("the start argument: %v", err)
	}
	return checkStartJSON(data, rules)
}

// CheckStartJSON is DecodeStart on JSON bytes.
func CheckStartJSON(data []byte) (*StartArgs, *contract.Agent, error) {
	return checkStartJSON(data, latestRules)
}

func checkStartJSON(data []byte, rules rules) (*StartArgs, *contract.Agent, error) {
	var args StartArgs
	if rules.lenientCarry && json.Unmarshal(data, &args) == nil && args.Carry != nil {
		// Written by the runtime for a run continued as new: a field a
		// newer build added is not this worker's to refuse (a carry of
		// newer rules fails the workflow task instead: newer_rules.go).
	} else if err := decodeStrict(data, &args); err != nil {
		return nil, nil, contract.Invalid("the start argument must be {\"agent\": {...}, \"input\"?: TaskIO, \"mode\"?: \"conversation\"|\"single\"}: %v", err)
	}
	agent, err := checkStart(&args, rules)
	if err != nil {
		return nil, nil, err
	}
	return &args, agent, nil
}

// decodeStrict decodes what a caller sent: a typo must not silently drop a
// setting.
func decodeStrict(data []byte, args *StartArgs) error {
	*args = StartArgs{}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(args)
}

// CheckStart validates a start argument in place (defaults filled in).
func CheckStart(args *StartArgs) (*contract.Agent, error) {
	return checkStart(args, latestRules)
}

func checkStart(args *StartArgs, rules rules) (*contract.Agent, error) {
	if args.CarryRef != nil {
		return nil, contract.Invalid("carryRef is written by the runtime when a task continues as new; leave it out")
	}
	agent, err := checkAgent("agent", args.Agent, rules)
	if err != nil {
		return nil, err
	}
	if rules.strictPartKeys && args.Input != nil && args.Carry == nil {
		if err := contract.CheckPartKeys(*args.Input); err != nil {
			return nil, contract.Invalid("input: %s", contract.MessageOf(err))
		}
	}
	if err := checkRetryTimeout(args, rules); err != nil {
		return nil, err
	}
	if err := checkTasksAPIArgs(args, agent, rules); err != nil {
		return nil, err
	}
	if err := checkStream(args, rules); err != nil {
		return nil, err
	}
	if err := checkBudgetArgs(args, rules); err != nil { // budget.go
		return nil, err
	}
	if err := checkVariables(args, rules); err != nil {
		return nil, err
	}
	switch args.Mode {
	case "":
		args.Mode = contract.ModeConversation
	case contract.ModeConversation, contract.ModeSingle:
	default:
		return nil, contract.Invalid("mode: %q must be \"conversation\" or \"single\"", args.Mode)
	}
	if args.IdleTimeout != "" {
		d, err := time.ParseDuration(args.IdleTimeout)
		if err != nil || d < time.Second {
			return nil, contract.Invalid("idleTimeout: %q must be a duration of at least 1s, such as \"30m\" or \"24h\"", args.IdleTimeout)
		}
	}
	if err := checkOutputArgs(args); err != nil {
		return nil, err
	}
	if c := args.Continue; c != nil {
		if c.TaskID == "" || c.FirstRunID == "" || c.TailFrom < 0 || c.TailFrom+len(c.Tail) != c.Length {
			return nil, contract.Invalid("continue: names an earlier task (task_id, first_run_id) and its committed length = tail_from + len(tail); use the starter's rescue or resume")
		}
		for i, m := range c.Tail {
			if m.CommittedAt == "" || (m.Type != contract.TypeInput && m.Type != contract.TypeOutput) {
				return nil, contract.Invalid("continue.tail[%d]: a committed input or output", i)
			}
		}
		for i, m := range c.Queued {
			if m.Type != contract.TypeInput || m.CommittedAt != "" || m.ReceivedAt == "" {
				return nil, contract.Invalid("continue.queued[%d]: an input received and not committed", i)
			}
		}
		if len(c.CollectedRefs) > 0 && !rules.collectedRefs {
			return nil, contract.Invalid("continue.collected_refs: this worker's rules keep no collected value by reference; leave it out")
		}
		//workflowcheck:ignore sorted: the first bad name is the same on every replay
		names := slices.Sorted(maps.Keys(c.CollectedRefs))
		for _, name := range names {
			ref := c.CollectedRefs[name]
			if _, ok := args.Collected[name]; !ok || !ref.Valid() {
				return nil, contract.Invalid("continue.collected_refs.%s: the reference of a collected value the earlier task kept in its stash (a name of collected, and its ref as the collected query gives it); use the starter's rescue or resume", name)
			}
		}
	}
	if args.ContinueAsNewEvents < 0 || (args.ContinueAsNewEvents > 0 && args.ContinueAsNewEvents < 100) {
		return nil, contract.Invalid("continueAsNewEvents: %d must be at least 100, or left out", args.ContinueAsNewEvents)
	}
	if args.Carry == nil && args.Input != nil {
		if err := admitStart(args, agent, rules); err != nil { // intake.go
			return nil, err
		}
	}
	return agent, nil
}

// Bounds of modelRetryTimeout. The upper one keeps a turn's retry reports
// (one signal per attempt for the first ten, then every fifth) far below
// Temporal's history limits.
const (
	DefaultModelRetryTimeout = 24 * time.Hour
	MaxModelRetryTimeout     = 7 * 24 * time.Hour
)

func checkRetryTimeout(args *StartArgs, rules rules) error {
	if args.ModelRetryTimeout == "" {
		return nil
	}
	if !rules.retryTimeoutKey {
		return contract.Invalid("the start argument must be {\"agent\": {...}, \"input\"?: TaskIO, \"mode\"?: \"conversation\"|\"single\"}: json: unknown field \"modelRetryTimeout\"")
	}
	d, err := time.ParseDuration(args.ModelRetryTimeout)
	if err != nil || d < time.Second || d > MaxModelRetryTimeout {
		return contract.Invalid("modelRetryTimeout: %q must be a duration from 1s to %s, such as \"30m\" or \"24h\" (the default)", args.ModelRetryTimeout, "168h")
	}
	return nil
}

// retryTimeout is how long the task's model calls and arrival checks wait
// out an outage.
func (a *StartArgs) retryTimeout() time.Duration {
	if d, err := time.ParseDuration(a.ModelRetryTimeout); err == nil && a.ModelRetryTimeout != "" {
		return d
	}
	return DefaultModelRetryTimeout
}

// DecodeInput reads a TaskIO sent by signal or update.
func DecodeInput(raw converter.RawValue) (contract.TaskIO, error) {
	data, err := payloadJSON(raw)
	if err != nil {
		return contract.TaskIO{}, contract.Invalid("the input: %v", err)
	}
	var in contract.TaskIO
	if err := json.Unmarshal(data, &in); err != nil {
		return contract.TaskIO{}, contract.Invalid("the input must be a TaskIO object such as {\"message\": [{\"mimeType\": \"text/plain\", \"text\": \"Hello\"}]}: %v", err)
	}
	return in, nil
}

// payloadJSON returns the JSON bytes of a payload written by any Temporal
// SDK's default converter.
// carryRefOf is the start argument's carryRef, if it has one.
func carryRefOf(raw converter.RawValue) *activities.StashRef {
	data, err := payloadJSON(raw)
	if err != nil {
		return nil
	}
	var a struct {
		CarryRef *activities.StashRef `json:"carryRef"`
	}
	if json.Unmarshal(data, &a) != nil {
		return nil
	}
	return a.CarryRef
}

func payloadJSON(raw converter.RawValue) ([]byte, error) {
	p := raw.Payload()
	if p == nil {
		return nil, fmt.Errorf("missing")
	}
	enc := string(p.GetMetadata()[converter.MetadataEncoding])
	switch enc {
	case converter.MetadataEncodingJSON:
		return p.GetData(), nil
	case converter.MetadataEncodingNil:
		return nil, fmt.Errorf("missing (null)")
	default:
		return nil, fmt.Errorf("encoded as %q; send JSON (the SDKs' default encoding)", enc)
	}
}

// checkTasksAPIArgs checks rules.historyAndModelKeys: history, and the agent
// keys topP, reasoningEffort, json and schema (refused on older rules,
// which never had them).
func checkTasksAPIArgs(args *StartArgs, agent *contract.Agent, rules rules) error {
	a := args.Agent
	if !rules.historyAndModelKeys {
		if len(args.History) > 0 || a.TopP != nil || a.ReasoningEffort != "" || a.JSON || len(a.Schema) > 0 {
			return contract.Invalid("history, topP, reasoningEffort, json and schema need a newer worker")
		}
		return nil
	}
	if len(args.History) > 0 && args.Continue != nil {
		return contract.Invalid("history: a task that continues another carries its conversation; leave history out")
	}
	if err := checkHistory(args.History); err != nil {
		return err
	}
	if rules.historyFits {
		return checkHistoryFits(args.History, agent)
	}
	return nil
}

// checkHistoryFits holds history entries to docs/contract.md's rules 5 and 6 and
// docs/content.md's inline budget (rules.historyFits): a history entry is bare text, so
// it cannot carry the parameters an input must (required ones) or the
// exposes keys every output carries; and its text is one inline part.
func checkHistoryFits(h []contract.HistoryMessage, agent *contract.Agent) error {
	for i, m := range h {
		if n := len(m.Content); n > contract.MaxInlineTextBytes {
			return contract.Invalid("history[%d].content: %d bytes is over the %d-byte inline budget of one text part (it is never split or truncated); send less, or upload it to the agent's mount and refer to it in an input", i, n, contract.MaxInlineTextBytes)
		}
		switch {
		case m.Role == "user" && agent.Parameters != nil && len(agent.Parameters.Required()) > 0:
			return contract.Invalid("history[%d]: a user entry is an input, and this agent's inputs require the parameters %s, which a history entry (role and content only) cannot carry; send those turns as inputs instead", i, strings.Join(agent.Parameters.Required(), ", "))
		case m.Role == "assistant" && agent.Exposes != nil && len(agent.Exposes.Properties()) > 0:
			return contract.Invalid("history[%d]: an assistant entry is an output, and every output of this agent carries its exposes keys %s, which a history entry (role and content only) cannot carry; leave assistant entries out, or start the agent without exposes", i, strings.Join(agent.Exposes.Properties(), ", "))
		}
	}
	return nil
}
