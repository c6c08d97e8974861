package workflows

import (
	"encoding/json"

	"go.temporal.io/sdk/converter"

	"github.com/agenttask/agenttask/contract"
)

// Bounds (rules.boundedVariables; the queue's, rules.boundedQueue, are
// intake.go's): what one task holds stays far below Temporal's limits
// whatever its callers send.

// checkVariables bounds StartArgs variables: they travel in the start
// argument and in every continue-as-new.
func checkVariables(args *StartArgs, rules rules) error {
	if !rules.boundedVariables || args.Carry != nil {
		return nil
	}
	if n := jsonSize(args.Variables); n > contract.MaxVariablesBytes {
		return contract.Invalid("variables: %d bytes serialised, more than %d; pass large values as files (a mount) instead", n, contract.MaxVariablesBytes)
	}
	return nil
}

// cancelTurnFor reads cancel-turn's optional argument: the turn it means,
// or 0 for whichever runs.
func cancelTurnFor(raw converter.RawValue, rules rules) int {
	if !rules.cancelNamesTurn || raw.Payload() == nil {
		return 0
	}
	data, err := payloadJSON(raw)
	if err != nil || len(data) == 0 {
		return 0
	}
	var a contract.CancelTurnArgs
	if json.Unmarshal(data, &a) != nil {
		return 0
	}
	return a.Turn
}
