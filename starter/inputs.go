package starter

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"go.temporal.io/sdk/client"

	"github.com/agenttask/agenttask/contract"
)

// Inputs and signals: what a caller sends a running task. An input decoded
// from JSON whose content parts carried keys a part does not have (such as
// "bytes") is refused here with INVALID_INPUT naming them
// (contract.CheckPartKeys), before anything is sent: decoding drops such
// keys, so the task would never see them.

// Send delivers an input with the `send` update and waits until the task
// has queued it. A refused input comes back as a *contract.Error
// (INVALID_INPUT, TASK_CLOSED, ...) and changes nothing. The input is sent
// as is: the task's validator checks it against its agent.
//
// The SDK gives each call a fresh update ID, so calling Send again after a
// lost reply may deliver the input twice; SendWithID retries safely.
func (c *Client) Send(ctx context.Context, taskID string, in contract.TaskIO) (contract.SendResult, error) {
	return c.SendWithID(ctx, taskID, "", in)
}

// SendWithID is Send with an input ID, the caller's idempotency key for the
// input: it is the update ID of the `send` update, and the task takes it as
// the input's ID. Retrying SendWithID with the same ID is safe: the task
// creates no second input and acknowledges the retry with the first
// receipt (the same received_at), also after the task has continued as new
// (it remembers the last 1,000 input IDs). Use one ID per input, such as a
// UUID or the ID of the request that carries it.
//
// inputID "" behaves exactly as Send: the SDK generates the update ID. A
// given ID must be valid UTF-8, at most contract.MaxInputIDBytes bytes and
// not blank (CheckInputID), and an input_id key already in `in` must equal
// it; otherwise SendWithID returns an INVALID_INPUT *contract.Error and sends
// nothing.
func (c *Client) SendWithID(ctx context.Context, taskID, inputID string, in contract.TaskIO) (contract.SendResult, error) {
	return inputUpdate[contract.SendResult](ctx, c, taskID, inputID, contract.UpdateSend, "sending to", in)
}

// inputUpdate delivers in with the input update name (send or ask) under
// update ID inputID ("": the SDK's) and reads the update's reply; verb
// says what failed in errors ("sending to", "asking").
func inputUpdate[R any](ctx context.Context, c *Client, taskID, inputID, name, verb string, in contract.TaskIO) (R, error) {
	var res R
	if err := contract.CheckPartKeys(in); err != nil {
		return res, err
	}
	if inputID != "" {
		if err := CheckInputIDFor(in, inputID); err != nil {
			return res, err
		}
	}
	h, err := c.c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		UpdateID:     inputID,
		WorkflowID:   taskID,
		UpdateName:   name,
		Args:         []any{in},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return res, taskError(taskID, verb, err)
	}
	if err := h.Get(ctx, &res); err != nil {
		return res, taskError(taskID, verb, err)
	}
	return res, nil
}

// Signal delivers an input with the `input` signal. There is no reply: a
// refused input shows in the task's status (rejected, last_rejection).
func (c *Client) Signal(ctx context.Context, taskID string, in contract.TaskIO) error {
	if err := contract.CheckPartKeys(in); err != nil {
		return err
	}
	return c.signal(ctx, taskID, contract.SignalInput, in)
}

// SignalWithID is Signal with an input ID, the caller's idempotency key for
// the input: it travels in the signal's TaskIO as the reserved key
// `input_id` (contract.KeyInputID), set on a copy of in.Values (the caller's
// map is left alone). Retrying SignalWithID with the same ID is safe: the
// task creates no second input, also after it has continued as new (it
// remembers the last 1,000 input IDs). There is still no reply.
//
// inputID "" behaves exactly as Signal. A given ID must be valid UTF-8, at
// most contract.MaxInputIDBytes bytes and not blank (CheckInputID), and an
// input_id key already in `in` must equal it; otherwise SignalWithID
// returns an INVALID_INPUT *contract.Error and signals nothing.
func (c *Client) SignalWithID(ctx context.Context, taskID, inputID string, in contract.TaskIO) error {
	if inputID == "" {
		return c.Signal(ctx, taskID, in)
	}
	if err := contract.CheckPartKeys(in); err != nil {
		return err
	}
	if err := CheckInputIDFor(in, inputID); err != nil {
		return err
	}
	raw, err := json.Marshal(inputID)
	if err != nil {
		return fmt.Errorf("encoding the input ID: %w", err)
	}
	vals := make(map[string]json.RawMessage, len(in.Values)+1)
	for k, v := range in.Values {
		vals[k] = v
	}
	vals[contract.KeyInputID] = raw
	in.Values = vals
	return c.signal(ctx, taskID, contract.SignalInput, in)
}

// CheckInputID refuses an input ID the task cannot take: blank, over
// contract.MaxInputIDBytes bytes, or not valid UTF-8. The refusal is an
// INVALID_INPUT *contract.Error.
func CheckInputID(id string) error {
	switch {
	case strings.TrimSpace(id) == "":
		return contract.Invalid("input ID: must not be empty or blank; give a key such as a UUID, or leave it out to send without one")
	case len(id) > contract.MaxInputIDBytes:
		return contract.Invalid("input ID: %d bytes is more than the %d allowed; use a shorter key such as a UUID or a hash of the request", len(id), contract.MaxInputIDBytes)
	case !utf8.ValidString(id):
		return contract.Invalid("input ID: not valid UTF-8; use a text key such as a UUID")
	}
	return nil
}

// CheckInputIDFor refuses, before anything is sent, an input ID that
// SendWithID and SignalWithID refuse for in: one CheckInputID refuses, or
// one other than an input_id key already in in. The refusal is an
// INVALID_INPUT *contract.Error.
func CheckInputIDFor(in contract.TaskIO, id string) error {
	if err := CheckInputID(id); err != nil {
		return err
	}
	return checkInputIDAgrees(in, id)
}

// checkInputIDAgrees refuses an input whose own input_id key is not id.
func checkInputIDAgrees(in contract.TaskIO, id string) error {
	raw, ok := in.Values[contract.KeyInputID]
	if !ok {
		return nil
	}
	var own string
	if err := json.Unmarshal(raw, &own); err == nil && own == id {
		return nil
	}
	shown := string(raw)
	if len(shown) > 2*contract.MaxInputIDBytes {
		shown = strings.ToValidUTF8(shown[:2*contract.MaxInputIDBytes], "") + "..."
	}
	return contract.Invalid("the input carries %s %s but the input ID is %q; give the ID one way only (or the same in both)", contract.KeyInputID, shown, id)
}

// Close asks the task to answer what it has received and complete.
func (c *Client) Close(ctx context.Context, taskID string) error {
	return c.signal(ctx, taskID, contract.SignalClose, nil)
}

// CancelTurn stops the task's running model call, if any.
func (c *Client) CancelTurn(ctx context.Context, taskID string) error {
	return c.signal(ctx, taskID, contract.SignalCancelTurn, nil)
}

// CancelTurnOf stops turn n only if it is the one running: a cancel that
// arrives after its turn was answered changes nothing.
func (c *Client) CancelTurnOf(ctx context.Context, taskID string, n int) error {
	return c.signal(ctx, taskID, contract.SignalCancelTurn, contract.CancelTurnArgs{Turn: n})
}

func (c *Client) signal(ctx context.Context, taskID, name string, arg any) error {
	if err := c.c.SignalWorkflow(ctx, taskID, "", name, arg); err != nil {
		return taskError(taskID, "signaling "+name+" to", err)
	}
	return nil
}
