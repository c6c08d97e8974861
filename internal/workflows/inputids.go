package workflows

import (
	"crypto/sha256"
	"encoding/base64"

	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/contract"
)

// Idempotent inputs (rules.inputIDs). Every input may carry its caller's ID:
// the `send` update's own update ID (or an `input_id` key in the input,
// which wins), or `input_id` in an `input` signal. A repeated ID creates no
// second input: a duplicate `send` gets the first receipt, a duplicate
// signal is dropped. The task remembers the last keptInputIDs IDs, across
// continue-as-new, so a client may retry a send for as long as that covers.

const keptInputIDs = 1000

// seenInput is one remembered ID and the received_at of its input.
type seenInput struct {
	ID string `json:"id"` // the ID, or a hash of a long one
	At string `json:"at"`
}

// pendingInput is an input whose ID is recorded while its arrival check
// runs: a duplicate waits for the outcome.
type pendingInput struct {
	done bool
	err  error
}

// idKey is how an ID is remembered: short IDs as they are, long ones by
// hash, so 1,000 of them stay a few tens of KiB of carried state.
func idKey(id string) string {
	if len(id) <= 40 {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return "sha256:" + base64.RawURLEncoding.EncodeToString(sum[:24])
}

// seen returns the first receipt of an ID the task already took. At most
// keptInputIDs are kept, so a scan is cheap next to a workflow task.
func (t *task) seen(id string) (string, bool) {
	if i := t.idIndex(id); i >= 0 {
		return t.durable.InputIDs[i].At, true
	}
	return "", false
}

func (t *task) idIndex(id string) int {
	if id == "" || !t.rules.inputIDs {
		return -1
	}
	k := idKey(id)
	for i, s := range t.durable.InputIDs {
		if s.ID == k {
			return i
		}
	}
	return -1
}

// remember records an accepted input's ID, forgetting the oldest beyond
// keptInputIDs.
func (t *task) remember(id, receivedAt string) {
	if id == "" || !t.rules.inputIDs || t.idIndex(id) >= 0 {
		return
	}
	t.durable.InputIDs = append(t.durable.InputIDs, seenInput{ID: idKey(id), At: receivedAt})
	if n := len(t.durable.InputIDs) - keptInputIDs; n > 0 {
		t.durable.InputIDs = append([]seenInput(nil), t.durable.InputIDs[n:]...)
	}
}

// forget drops the ID of an input that was refused after it was recorded
// (its arrival check failed), so a corrected retry is taken.
func (t *task) forget(id string) {
	if i := t.idIndex(id); i >= 0 {
		t.durable.InputIDs = append(t.durable.InputIDs[:i:i], t.durable.InputIDs[i+1:]...)
	}
}

// sendInputID is the ID of an input sent by `send`: its input_id key, or
// else the update's ID.
func sendInputID(ctx workflow.Context, id string) string {
	if id != "" {
		return id
	}
	if info := workflow.GetCurrentUpdateInfo(ctx); info != nil && len(info.ID) <= contract.MaxInputIDBytes {
		return info.ID
	}
	return ""
}
