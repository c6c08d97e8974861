package workflows

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"go.temporal.io/sdk/converter"

	"github.com/agenttask/agenttask/guard"

	"github.com/agenttask/agenttask/schema"
)

// DecodeStart reads and checks the start argument. The workflow calls it in
// its first workflow task; the starter calls it before starting, so Go
// callers get the same refusal synchronously.
func DecodeStart(raw converter.RawValue) (*StartArgs, *schema.Agent, error) {
	data, err := payloadJSON(raw)
	if err != nil {
		return nil, nil, schema.Invalid("the start argument: %v", err)
	}
	return CheckStartJSON(data)
}

// CheckStartJSON is DecodeStart on JSON bytes.
func CheckStartJSON(data []byte) (*StartArgs, *schema.Agent, error) {
	var args StartArgs
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields() // a typo must not silently drop a setting
	if err := dec.Decode(&args); err != nil {
		return nil, nil, schema.Invalid("the start argument must be {\"agent\": {...}, \"input\"?: TaskIO, \"mode\"?: \"conversation\"|\"single\"}: %v", err)
	}
	agent, err := CheckStart(&args)
	if err != nil {
		return nil, nil, err
	}
	return &args, agent, nil
}

// CheckStart validates a start argument in place (defaults filled in).
func CheckStart(args *StartArgs) (*schema.Agent, error) {
	agent, err := CheckAgent("agent", args.Agent)
	if err != nil {
		return nil, err
	}
	switch args.Mode {
	case "":
		args.Mode = ModeConversation
	case ModeConversation, ModeSingle:
	default:
		return nil, schema.Invalid("mode: %q must be \"conversation\" or \"single\"", args.Mode)
	}
	if args.IdleTimeout != "" {
		d, err := time.ParseDuration(args.IdleTimeout)
		if err != nil || d < time.Second {
			return nil, schema.Invalid("idleTimeout: %q must be a duration of at least 1s, such as \"30m\" or \"24h\"", args.IdleTimeout)
		}
	}
	if err := checkOutputArgs(args); err != nil {
		return nil, err
	}
	if c := args.Continue; c != nil {
		if c.TaskID == "" || c.FirstRunID == "" || c.TailFrom < 0 || c.TailFrom+len(c.Tail) != c.Length {
			return nil, schema.Invalid("continue: names an earlier task (task_id, first_run_id) and its committed length = tail_from + len(tail); use the starter's rescue or resume")
		}
		for i, m := range c.Tail {
			if m.CommittedAt == "" || (m.Type != schema.TypeInput && m.Type != schema.TypeOutput) {
				return nil, schema.Invalid("continue.tail[%d]: a committed input or output", i)
			}
		}
		for i, m := range c.Queued {
			if m.Type != schema.TypeInput || m.CommittedAt != "" || m.ReceivedAt == "" {
				return nil, schema.Invalid("continue.queued[%d]: an input received and not committed", i)
			}
		}
	}
	if args.ContinueAsNewEvents < 0 || (args.ContinueAsNewEvents > 0 && args.ContinueAsNewEvents < 100) {
		return nil, schema.Invalid("continueAsNewEvents: %d must be at least 100, or left out", args.ContinueAsNewEvents)
	}
	if args.Carry == nil && args.Input != nil {
		in, err := schema.CheckInput(agent, *args.Input)
		if err != nil {
			return nil, schema.Invalid("input: %s", err.(*schema.Error).Message)
		}
		if !in.HasFiles() && !guard.AnyReadsContext(args.Agent.Guardrails) {
			if err := guard.EvaluateGuardrails(guard.FromSpec(args.Agent.Guardrails), in.Message, guard.Context{}); err != nil {
				return nil, err
			}
		}
		args.Input = &in
	}
	return agent, nil
}

// DecodeInput reads a TaskIO sent by signal or update.
func DecodeInput(raw converter.RawValue) (schema.TaskIO, error) {
	data, err := payloadJSON(raw)
	if err != nil {
		return schema.TaskIO{}, schema.Invalid("the input: %v", err)
	}
	var in schema.TaskIO
	if err := json.Unmarshal(data, &in); err != nil {
		return schema.TaskIO{}, schema.Invalid("the input must be a TaskIO object such as {\"message\": [{\"mimeType\": \"text/plain\", \"text\": \"Hello\"}]}: %v", err)
	}
	return in, nil
}

// payloadJSON returns the JSON bytes of a payload written by any Temporal
// SDK's default converter.
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
