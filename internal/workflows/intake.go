package workflows

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/guard"
)

// Taking in an input. Every input (a send or ask update's, an input
// signal's, the start argument's) is first admitted: every acceptance rule
// is in admit (admitStart for the start input), which writes no state, so
// the updates' validators call it. An admitted input is then taken: stamped
// received_at, its ID remembered, checked on arrival as far as it needs
// (arrival.go) and queued until the next model call commits it.

// via is how an input arrived.
type via int

const (
	viaUpdate via = iota // send or ask: the caller waits for the receipt
	viaSignal            // input signal: a refusal is recorded, not replied
)

// admission is what admit decided about an input.
type admission struct {
	in      contract.TaskIO // the input as it is queued (normalised when its own checks pass)
	id      string          // its caller's ID ("" without one)
	firstAt string          // a repeated ID: the first input's received_at
	refusal error           // why it is refused; nil when accepted or repeated
}

// repeat says the input's ID was taken before: it creates no second input.
func (a admission) repeat() bool { return a.firstAt != "" }

// admit applies every acceptance rule to an input arriving by update or
// signal. The error says the input cannot be read at all; a readable input
// that is refused says why in refusal. It writes no state: a validator
// calls it, and a handler whose validator already decided calls it for the
// input as queued.
func (t *task) admit(ctx workflow.Context, raw converter.RawValue, v via) (admission, error) {
	in, err := DecodeInput(raw)
	if err != nil {
		return admission{}, err
	}
	in, id, err := splitInputID(in, t.rules)
	if err != nil {
		return admission{}, err
	}
	if v == viaSignal && t.rules.strictPartKeys {
		// Updates' validators refuse unknown part keys before this
		// (refuseUnknownPartKeys); a signal is checked again on replay.
		if err := contract.CheckPartKeys(in); err != nil {
			return admission{}, err
		}
	}
	if v == viaUpdate && t.rules.inputIDs {
		id = sendInputID(ctx, id)
	}
	a := admission{in: in, id: id}
	if at, dup := t.durable.seen(id, t.rules.inputIDs); dup {
		a.firstAt = at
		return a, nil
	}
	shaped, shapeErr := checkInputUnder(t.agent, in, t.rules)
	if shapeErr == nil {
		a.in = shaped
	}
	switch {
	case t.life.accepting(t.durable, t.args.Mode) != nil:
		a.refusal = t.life.accepting(t.durable, t.args.Mode)
	case t.rules.boundedQueue && t.durable.queueRoom(in, t.arrivals.beingChecked()) != nil:
		a.refusal = t.durable.queueRoom(in, t.arrivals.beingChecked())
	case shapeErr != nil:
		a.refusal = shapeErr
	case !t.arrivals.needsActivity(shaped):
		// Guardrails that read only the input run here; CheckInput runs
		// the others on arrival.
		a.refusal = guard.EvaluateGuardrails(guard.FromSpec(t.args.Agent.Guardrails), shaped.Message, guard.Context{})
	}
	return a, nil
}

// admitStart is admit for the start argument's input, refused with the
// start (INVALID_INPUT, or the guardrail's refusal) before any model call.
// Nothing is queued yet, so only the input's own checks apply.
func admitStart(args *StartArgs, agent *contract.Agent, rules rules) error {
	in, _, err := splitInputID(*args.Input, rules)
	if err != nil {
		return contract.Invalid("input: %s", contract.MessageOf(err))
	}
	if in, err = checkInputUnder(agent, in, rules); err != nil {
		return contract.Invalid("input: %s", contract.MessageOf(err))
	}
	if !in.HasFiles() && !guard.AnyReadsContext(args.Agent.Guardrails) {
		if err := guard.EvaluateGuardrails(guard.FromSpec(args.Agent.Guardrails), in.Message, guard.Context{}); err != nil {
			return err
		}
	}
	in.Values = args.Input.Values // the input ID stays with the input: the task records it
	args.Input = &in
	return nil
}

// checkInputUnder is contract.CheckInput under the rules of a run: the part
// bounds (parts per message, sizeBytes) are rules.boundedParts, and signals
// and start inputs are checked again on replay.
func checkInputUnder(a *contract.Agent, in contract.TaskIO, rules rules) (contract.TaskIO, error) {
	if !rules.boundedParts {
		return checkInputBefore(a, in) // replay_shims.go
	}
	return contract.CheckInput(a, in)
}

// receive stamps an admitted input with the instant the runtime took
// delivery (the start time of the workflow task that delivers it) and
// remembers its ID.
func (t *task) receive(ctx workflow.Context, a admission) contract.Message {
	in := a.in
	in.ReceivedAt = contract.FormatTime(workflow.Now(ctx))
	in.CommittedAt = ""
	t.durable.remember(a.id, in.ReceivedAt, t.rules.inputIDs)
	return contract.Message{Type: contract.TypeInput, TaskIO: in}
}

// takeUpdate takes an input a send or ask admitted: the caller waits for
// its arrival check, and a repeat of its ID waits for the outcome.
func (t *task) takeUpdate(ctx workflow.Context, a admission) (contract.Message, error) {
	m := t.receive(ctx, a)
	held := a.id != "" && t.arrivals.needsActivity(a.in)
	if held {
		t.arrivals.hold(a.id)
	}
	m, err := t.arrive(ctx, m)
	if held {
		t.arrivals.release(a.id, err)
	}
	if err != nil {
		t.durable.forget(a.id, t.rules.inputIDs)
	}
	return m, err
}

// takeSignal takes an input an input signal brought. Its arrival check,
// when it needs one, runs beside the signal reader; a refusal is recorded.
func (t *task) takeSignal(ctx workflow.Context, a admission) {
	m := t.receive(ctx, a)
	if !t.arrivals.needsActivity(a.in) {
		_, _ = t.arrive(ctx, m) // queues at once
		return
	}
	done := t.arrivals.beginBeside() // counted before the coroutine starts, so nothing closes in between
	workflow.Go(ctx, func(ctx workflow.Context) {
		defer done()
		if _, err := t.arrive(ctx, m); err != nil {
			// Refused after its signal was taken in: recorded, as a
			// signal has no reply.
			t.durable.forget(a.id, t.rules.inputIDs)
			r := t.durable.refused(rejectionOf(err, contract.MessageOf(err), workflow.Now(ctx)))
			countRejected(ctx, err)
			t.logger.Warn("input refused on arrival", "type", r.Type, "reason", r.Message)
		}
	})
}

// queueRecord is the carried part of the intake: the inputs received and
// not yet committed, the IDs of the last inputs taken, and the refusals of
// inputs that came by signal.
type queueRecord struct {
	// Queue holds inputs received and not yet committed, in arrival order.
	Queue []contract.Message `json:"queue,omitempty"`
	// InputIDs are the IDs of the last inputs taken, oldest first: a
	// repeated ID creates no second input.
	InputIDs      []seenInput         `json:"input_ids,omitempty"`
	Rejected      int                 `json:"rejected"`
	LastRejection *contract.Rejection `json:"last_rejection,omitempty"`
}

// enqueue appends an input that passed its arrival check.
func (q *queueRecord) enqueue(m contract.Message) { q.Queue = append(q.Queue, m) }

// queued is the number of inputs waiting for a turn.
func (q *queueRecord) queued() int { return len(q.Queue) }

// queuedInputs are the inputs waiting for a turn, oldest first (the
// caller does not keep the slice).
func (q *queueRecord) queuedInputs() []contract.Message { return q.Queue }

// takeQueue hands the waiting inputs over to be committed.
func (q *queueRecord) takeQueue() []contract.Message {
	out := q.Queue
	q.Queue = nil
	return out
}

// requeue puts committed inputs back at the head of the queue (a turn
// whose call was refused for budget: uncommit).
func (q *queueRecord) requeue(ms []contract.Message) {
	q.Queue = append(append([]contract.Message(nil), ms...), q.Queue...)
}

// queueRoom refuses an input that would take the queue past its bounds
// (rules.boundedQueue): what one task holds stays far below Temporal's
// limits whatever its callers send. Inputs still in their arrival check
// count as queued.
func (q *queueRecord) queueRoom(in contract.TaskIO, inCheck []*contract.Message) error {
	n := len(q.Queue) + len(inCheck)
	if n >= contract.MaxQueuedInputs {
		return &contract.Error{Type: contract.ErrQueueFull, Message: fmt.Sprintf(
			"the task holds %d inputs not yet committed, its most; send again once a turn has committed them (status.queued)", n)}
	}
	size := jsonSize(in)
	for _, m := range q.Queue {
		size += jsonSize(m)
	}
	for _, m := range inCheck {
		size += jsonSize(*m)
	}
	if size > contract.MaxQueuedBytes {
		return &contract.Error{Type: contract.ErrQueueFull, Message: fmt.Sprintf(
			"the task's inputs not yet committed would hold %d bytes, more than %d; send again once a turn has committed them (status.queued)", size, contract.MaxQueuedBytes)}
	}
	return nil
}

// refused records an input refused by signal, returning the record.
func (q *queueRecord) refused(r *contract.Rejection) *contract.Rejection {
	q.Rejected++
	q.LastRejection = r
	return r
}

// rejectionOf describes an input refused with err; message is what status
// shows of it.
func rejectionOf(err error, message string, at time.Time) *contract.Rejection {
	r := &contract.Rejection{Type: contract.TypeOf(err), Message: message, At: contract.FormatTime(at)}
	if r.Type == "" {
		r.Type = contract.ErrInvalidInput
	}
	return r
}

// rejections are the count of inputs refused by signal and the last one.
func (q *queueRecord) rejections() (int, *contract.Rejection) { return q.Rejected, q.LastRejection }

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

// seen returns the first receipt of an ID the task already took. At most
// keptInputIDs are kept, so a scan is cheap next to a workflow task.
func (q *queueRecord) seen(id string, on bool) (string, bool) {
	if i := q.idIndex(id, on); i >= 0 {
		return q.InputIDs[i].At, true
	}
	return "", false
}

func (q *queueRecord) idIndex(id string, on bool) int {
	if id == "" || !on {
		return -1
	}
	k := idKey(id)
	for i, s := range q.InputIDs {
		if s.ID == k {
			return i
		}
	}
	return -1
}

// remember records an accepted input's ID, forgetting the oldest beyond
// keptInputIDs.
func (q *queueRecord) remember(id, receivedAt string, on bool) {
	if id == "" || !on || q.idIndex(id, on) >= 0 {
		return
	}
	q.InputIDs = append(q.InputIDs, seenInput{ID: idKey(id), At: receivedAt})
	if n := len(q.InputIDs) - keptInputIDs; n > 0 {
		q.InputIDs = append([]seenInput(nil), q.InputIDs[n:]...)
	}
}

// forget drops the ID of an input that was refused after it was recorded
// (its arrival check failed), so a corrected retry is taken.
func (q *queueRecord) forget(id string, on bool) {
	if i := q.idIndex(id, on); i >= 0 {
		q.InputIDs = append(q.InputIDs[:i:i], q.InputIDs[i+1:]...)
	}
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

// splitInputID takes the caller's input ID off an input (rules that know
// input IDs; before them input_id was an ordinary dynamic key).
func splitInputID(in contract.TaskIO, rules rules) (contract.TaskIO, string, error) {
	raw, ok := in.Values[contract.KeyInputID]
	if !rules.inputIDs || !ok {
		return in, "", nil
	}
	var id string
	if err := json.Unmarshal(raw, &id); err != nil {
		return in, "", contract.Invalid("%s must be a string: the caller's ID of this input, at most %d bytes", contract.KeyInputID, contract.MaxInputIDBytes)
	}
	if err := checkInputID(id); err != nil {
		return in, "", err
	}
	values := make(map[string]json.RawMessage, len(in.Values))
	//workflowcheck:ignore a copy
	for k, v := range in.Values {
		if k != contract.KeyInputID {
			values[k] = v
		}
	}
	if len(values) == 0 {
		values = nil
	}
	in.Values = values
	return in, id, nil
}

func checkInputID(id string) error {
	if id == "" || len(id) > contract.MaxInputIDBytes || !utf8.ValidString(id) {
		return contract.Invalid("%s: %d bytes; an input ID is 1 to %d bytes of UTF-8, the same for every retry of one input", contract.KeyInputID, len(id), contract.MaxInputIDBytes)
	}
	return nil
}

func jsonSize(v any) int {
	b, _ := json.Marshal(v)
	return len(b)
}

// takeFirst hands the first n waiting inputs over to be committed (all of
// them when fewer wait).
func (q *queueRecord) takeFirst(n int) []contract.Message {
	n = min(n, len(q.Queue))
	out := q.Queue[:n]
	q.Queue = q.Queue[n:]
	if len(q.Queue) == 0 {
		q.Queue = nil
	}
	return out
}
