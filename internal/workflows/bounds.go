package workflows

import (
	"encoding/json"
	"fmt"

	"go.temporal.io/sdk/converter"

	"github.com/agenttask/agenttask/contract"
)

// Bounds (rules.boundedQueue, boundedVariables): what one task holds stays
// far below Temporal's limits whatever its callers send. Inputs wait in the queue until the next
// model call commits them; a caller that sends faster than turns run is
// told so (QUEUE_FULL) instead of growing the task's state.

// queueRoom refuses an input that would take the queue past its bounds.
// Inputs still in their arrival check count as queued.
func (t *task) queueRoom(in contract.TaskIO) error {
	if !t.rules.boundedQueue {
		return nil
	}
	n := len(t.durable.Queue) + len(t.arrivals.inCheck)
	if n >= MaxQueuedInputs {
		return &contract.Error{Type: ErrQueueFull, Message: fmt.Sprintf(
			"the task holds %d inputs not yet committed, its most; send again once a turn has committed them (status.queued)", n)}
	}
	size := jsonSize(in)
	for _, m := range t.durable.Queue {
		size += jsonSize(m)
	}
	for _, m := range t.arrivals.inCheck {
		size += jsonSize(*m)
	}
	if size > MaxQueuedBytes {
		return &contract.Error{Type: ErrQueueFull, Message: fmt.Sprintf(
			"the task's inputs not yet committed would hold %d bytes, more than %d; send again once a turn has committed them (status.queued)", size, MaxQueuedBytes)}
	}
	return nil
}

func jsonSize(v any) int {
	b, _ := json.Marshal(v)
	return len(b)
}

// checkVariables bounds StartArgs variables: they travel in the start
// argument and in every continue-as-new.
func checkVariables(args *StartArgs, rules rules) error {
	if !rules.boundedVariables || args.Carry != nil {
		return nil
	}
	if n := jsonSize(args.Variables); n > MaxVariablesBytes {
		return contract.Invalid("variables: %d bytes serialised, more than %d; pass large values as files (a mount) instead", n, MaxVariablesBytes)
	}
	return nil
}

// cancelTurnFor reads cancel-turn's optional argument: the turn it means,
// or 0 for whichever runs.
func (t *task) cancelTurnFor(raw converter.RawValue) int {
	if !t.rules.cancelNamesTurn || raw.Payload() == nil {
		return 0
	}
	data, err := payloadJSON(raw)
	if err != nil || len(data) == 0 {
		return 0
	}
	var a CancelTurnArgs
	if json.Unmarshal(data, &a) != nil {
		return 0
	}
	return a.Turn
}
