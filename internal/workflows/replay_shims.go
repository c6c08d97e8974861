package workflows

import (
	"encoding/json"
	"fmt"

	"github.com/agenttask/agenttask/contract"
)

// Replay shims: checks as earlier rules ran them, which tasks started under
// those rules still run so that their recorded histories replay with the
// acceptance they were recorded with. Package contract states today's
// rules only; what an earlier rule did differently lives here, beside the
// workflow that picks it by the task's rules (agent_rules.go).

// checkInputBefore is contract.CheckInput as tasks started before
// rules.boundedParts ran it: the same checks in the same order without the
// bounds on the parts (at most contract.MaxMessageParts of them, and a
// caller's sizeBytes checked), which those tasks' inputs were never held
// to. A caller's sizeBytes is replaced all the same (CheckContentPart).
func checkInputBefore(a *contract.Agent, in contract.TaskIO) (contract.TaskIO, error) {
	if in.ReceivedAt != "" {
		return in, contract.Invalid("received_at is set by the runtime when it takes delivery; leave it out")
	}
	if in.CommittedAt != "" {
		return in, contract.Invalid("committed_at is set by the runtime when the input enters the conversation; leave it out")
	}
	if in.Message == nil {
		return in, contract.Invalid("message is required: a list of content parts, e.g. [{\"mimeType\":\"text/plain\",\"text\":\"Hello\"}]")
	}
	if len(in.Message) == 0 {
		return in, contract.Invalid("message must hold at least one content part")
	}
	parts := make([]contract.ContentPart, len(in.Message))
	for i, p := range in.Message {
		np, err := contract.CheckContentPart(a, fmt.Sprintf("message[%d]", i), p)
		if err != nil {
			return in, err
		}
		parts[i] = np
	}
	out := contract.TaskIO{Message: parts, Values: in.Values}
	if err := contract.CheckValues(a, in.Values); err != nil {
		return in, err
	}
	if b, _ := json.Marshal(out); len(b) > contract.MaxInputBytes {
		return in, contract.Invalid("the input is %d bytes serialised, more than the %d one input may carry; split it into several inputs or send large content as files", len(b), contract.MaxInputBytes)
	}
	return out, nil
}
