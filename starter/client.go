// Package starter is the Go client of the agent-task runtime: it starts
// AgentTask workflows and talks to them (send, signal, status, messages,
// close, cancel-turn, result, approvals and their decisions), turning Temporal's errors into the runtime's
// typed errors (*contract.Error). Main in cli.go is the `starter` command.
//
// The package links only the Temporal SDK, never the server.
package starter

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/mount"
	"github.com/agenttask/agenttask/internal/workflows"
)

// Client starts agent tasks and talks to them.
type Client struct {
	c     client.Client
	queue string
	// mounts, when set, is the workers' AGENT_MOUNTS: starts are checked
	// against it here, before anything is started.
	mounts mount.Mounts
	// dc is the Temporal client's data converter, which rescue and resume
	// read start arguments from history with; nil: the SDK's default.
	dc converter.DataConverter
}

// WithDataConverter tells the client which data converter its Temporal
// client was given (client.Options.DataConverter), so that rescue and
// resume can read an earlier run's start argument from history when
// payloads are encrypted (AGENT_CODEC_KEYS). nil keeps the SDK's default.
func (c *Client) WithDataConverter(dc converter.DataConverter) *Client {
	c.dc = dc
	return c
}

func (c *Client) dataConverter() converter.DataConverter {
	if c.dc != nil {
		return c.dc
	}
	return converter.GetDefaultDataConverter()
}

// CheckMounts makes Start refuse, synchronously, an agent whose mount (or a
// delegated agent's) is not in mounts, the workers' AGENT_MOUNTS. Without
// it the task itself refuses such a start when it begins.
func (c *Client) CheckMounts(mounts mount.Mounts) *Client {
	c.mounts = mounts
	return c
}

// New wraps a Temporal client. taskQueue "" means workflows.DefaultTaskQueue.
func New(c client.Client, taskQueue string) *Client {
	if taskQueue == "" {
		taskQueue = workflows.DefaultTaskQueue
	}
	return &Client{c: c, queue: taskQueue}
}

// TaskQueue is the queue tasks are started on.
func (c *Client) TaskQueue() string { return c.queue }

// Temporal returns the wrapped Temporal client.
func (c *Client) Temporal() client.Client { return c.c }

// StartOptions tune Start.
type StartOptions struct {
	// TaskID names the task (the workflow ID). "" generates "task-" plus 16
	// random base32 characters. An ID names one task forever: starting a
	// second task with it fails with TASK_EXISTS.
	TaskID string
	// Memo is shown with the task in the Web UI (rescue and resume link the
	// old task there).
	Memo map[string]any
	// Variables (rescue and resume) replace the earlier task's variables of
	// the same names; a task whose first run's history is gone needs its
	// secrets passed here again.
	Variables map[string]json.RawMessage
}

// MaxTaskIDBytes bounds a caller-chosen task ID.
const MaxTaskIDBytes = 255

// NewTaskID returns a fresh random task ID: "task-" + 10 random bytes in
// lowercase base32.
func NewTaskID() (string, error) {
	var b [10]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("generating a task ID: %w", err)
	}
	return "task-" + strings.ToLower(base32.StdEncoding.EncodeToString(b[:])), nil
}

// CheckTaskID refuses task IDs that Temporal or the runtime cannot carry
// cleanly: over MaxTaskIDBytes, not UTF-8, or holding spaces or control
// characters.
func CheckTaskID(id string) error {
	switch {
	case id == "":
		return contract.Invalid("task ID: must not be empty; leave it out to generate one")
	case len(id) > MaxTaskIDBytes:
		return contract.Invalid("task ID: %d bytes is more than the %d allowed", len(id), MaxTaskIDBytes)
	case !utf8.ValidString(id):
		return contract.Invalid("task ID: not valid UTF-8")
	case strings.IndexFunc(id, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return contract.Invalid("task ID: %q holds spaces or control characters; use letters, digits and punctuation such as - _ . :", id)
	}
	return nil
}

// SearchAttributes are a task's search attributes at its start: its agent's
// name and model, and AgentState "active" (the task keeps that one current,
// since its start carried it).
func SearchAttributes(agent contract.AgentSpec) temporal.SearchAttributes {
	return temporal.NewSearchAttributes(
		temporal.NewSearchAttributeKeyKeyword(workflows.SearchAttributeAgentName).ValueSet(agent.Name),
		temporal.NewSearchAttributeKeyKeyword(workflows.SearchAttributeAgentModel).ValueSet(agent.Model),
		temporal.NewSearchAttributeKeyKeyword(workflows.SearchAttributeAgentState).ValueSet(workflows.AgentStateActive),
	)
}

// Summary is the one line the Web UI shows for a task.
func Summary(args workflows.StartArgs) string {
	mode := args.Mode
	if mode == "" {
		mode = workflows.ModeConversation
	}
	return fmt.Sprintf("agent %s · %s · %s", args.Agent.Name, args.Agent.Model, mode)
}

// Start validates args exactly as the workflow will (workflows.CheckStart)
// and, only when they pass, starts the task. A refusal is the *contract.Error
// itself and nothing is started. It returns the task ID.
func (c *Client) Start(ctx context.Context, args workflows.StartArgs, o StartOptions) (string, error) {
	if args.Carry != nil {
		return "", contract.Invalid("carry is written by the runtime when a task continues as new; leave it out")
	}
	if _, err := workflows.CheckStart(&args); err != nil {
		return "", err
	}
	if c.mounts != nil {
		if err := workflows.CheckMounts(args.Agent, c.mounts); err != nil {
			return "", err
		}
	}
	id := o.TaskID
	if id == "" {
		var err error
		if id, err = NewTaskID(); err != nil {
			return "", err
		}
	} else if err := CheckTaskID(id); err != nil {
		return "", err
	}
	if args.Stream {
		if err := workflows.CheckStreamID(id); err != nil {
			return "", err
		}
	}
	opts := client.StartWorkflowOptions{
		ID:                                       id,
		TaskQueue:                                c.queue,
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy:                 enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		TypedSearchAttributes:                    SearchAttributes(args.Agent),
		StaticSummary:                            Summary(args),
		Memo:                                     o.Memo,
	}
	_, err := c.c.ExecuteWorkflow(ctx, opts, workflows.WorkflowType, args)
	if err != nil && SearchAttributesRefused(err) {
		// A plain Temporal server may not have the attributes registered:
		// the task runs the same without them.
		opts.TypedSearchAttributes = temporal.SearchAttributes{}
		_, err = c.c.ExecuteWorkflow(ctx, opts, workflows.WorkflowType, args)
	}
	if err != nil {
		return "", taskError(id, "starting", err)
	}
	return id, nil
}

// Send delivers an input with the `send` update and waits until the task
// has queued it. A refused input comes back as a *contract.Error
// (INVALID_INPUT, TASK_CLOSED, ...) and changes nothing. The input is sent
// as is: the task's validator checks it against its agent.
//
// The SDK gives each call a fresh update ID, so calling Send again after a
// lost reply may deliver the input twice; SendWithID retries safely.
func (c *Client) Send(ctx context.Context, taskID string, in contract.TaskIO) (workflows.SendResult, error) {
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
func (c *Client) SendWithID(ctx context.Context, taskID, inputID string, in contract.TaskIO) (workflows.SendResult, error) {
	var res workflows.SendResult
	if inputID != "" {
		if err := CheckInputID(inputID); err != nil {
			return res, err
		}
		if err := checkInputIDAgrees(in, inputID); err != nil {
			return res, err
		}
	}
	h, err := c.c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		UpdateID:     inputID,
		WorkflowID:   taskID,
		UpdateName:   workflows.UpdateSend,
		Args:         []any{in},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return res, taskError(taskID, "sending to", err)
	}
	if err := h.Get(ctx, &res); err != nil {
		return res, taskError(taskID, "sending to", err)
	}
	return res, nil
}

// Signal delivers an input with the `input` signal. There is no reply: a
// refused input shows in the task's status (rejected, last_rejection).
func (c *Client) Signal(ctx context.Context, taskID string, in contract.TaskIO) error {
	return c.signal(ctx, taskID, workflows.SignalInput, in)
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
	if err := CheckInputID(inputID); err != nil {
		return err
	}
	if err := checkInputIDAgrees(in, inputID); err != nil {
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
	return c.signal(ctx, taskID, workflows.SignalInput, in)
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
	return c.signal(ctx, taskID, workflows.SignalClose, nil)
}

// CancelTurn stops the task's running model call, if any.
func (c *Client) CancelTurn(ctx context.Context, taskID string) error {
	return c.signal(ctx, taskID, workflows.SignalCancelTurn, nil)
}

// CancelTurnOf stops turn n only if it is the one running: a cancel that
// arrives after its turn was answered changes nothing.
func (c *Client) CancelTurnOf(ctx context.Context, taskID string, n int) error {
	return c.signal(ctx, taskID, workflows.SignalCancelTurn, workflows.CancelTurnArgs{Turn: n})
}

func (c *Client) signal(ctx context.Context, taskID, name string, arg any) error {
	if err := c.c.SignalWorkflow(ctx, taskID, "", name, arg); err != nil {
		return taskError(taskID, "signaling "+name+" to", err)
	}
	return nil
}

// Status queries the task's status.
func (c *Client) Status(ctx context.Context, taskID string) (workflows.Status, error) {
	var st workflows.Status
	v, err := c.c.QueryWorkflow(ctx, taskID, "", workflows.QueryStatus)
	if err != nil {
		return st, taskError(taskID, "querying the status of", err)
	}
	if err := v.Get(&st); err != nil {
		return st, fmt.Errorf("decoding the status of task %q: %w", taskID, err)
	}
	return st, nil
}

// Messages queries the task's messages. A nil page asks for the whole list
// (refused by the task beyond workflows.MaxFullListBytes); a page asks for
// entries [After, After+Limit), Limit 0 meaning as many as fit a reply.
func (c *Client) Messages(ctx context.Context, taskID string, page *workflows.MessagesPage) ([]contract.Message, error) {
	var args []any
	if page != nil {
		args = []any{*page}
	}
	v, err := c.c.QueryWorkflow(ctx, taskID, "", workflows.QueryMessages, args...)
	// Entries of earlier runs being loaded from a slow store: the worker
	// answers at once and goes on loading, so ask again in a moment.
	for deadline := time.Now().Add(workflows.MessagesLoadingRetryFor); workflows.IsMessagesLoading(err) && time.Now().Before(deadline); {
		select {
		case <-ctx.Done():
		case <-time.After(workflows.MessagesLoadingRetryPause):
			v, err = c.c.QueryWorkflow(ctx, taskID, "", workflows.QueryMessages, args...)
			continue
		}
		break
	}
	if workflows.IsMessagesLoading(err) {
		return nil, &contract.Error{Type: workflows.ErrMessagesLoading, Message: fmt.Sprintf(
			"earlier messages of task %q are still being loaded from storage (slow or unavailable); retry in a moment", taskID)}
	}
	if err != nil {
		return nil, taskError(taskID, "querying the messages of", err)
	}
	var out []contract.Message
	if err := v.Get(&out); err != nil {
		return nil, fmt.Errorf("decoding the messages of task %q: %w", taskID, err)
	}
	if out == nil {
		out = []contract.Message{}
	}
	return out, nil
}

// AllMessages reads the whole list page by page. Committed entries keep
// their positions; queued inputs sit after them and move down when a turn
// commits in front of them, so the queued tail is read last and the read
// starts again from the committed count if the list moved meanwhile.
func (c *Client) AllMessages(ctx context.Context, taskID string) ([]contract.Message, error) {
	var committed []contract.Message
	for {
		page, err := c.Messages(ctx, taskID, &workflows.MessagesPage{After: len(committed)})
		if err != nil {
			return nil, err
		}
		if len(page) == 0 {
			return append([]contract.Message{}, committed...), nil
		}
		i := firstUncommitted(page)
		committed = append(committed, page[:i]...)
		if i == len(page) {
			continue
		}
		tail, moved, err := c.queuedTail(ctx, taskID, len(committed), page[i:])
		if err != nil {
			return nil, err
		}
		if !moved {
			return append(committed, tail...), nil
		}
	}
}

// queuedTail reads the rest of the uncommitted tail; moved reports that a
// committed entry appeared in it (the list changed under the reader).
func (c *Client) queuedTail(ctx context.Context, taskID string, at int, tail []contract.Message) ([]contract.Message, bool, error) {
	for {
		page, err := c.Messages(ctx, taskID, &workflows.MessagesPage{After: at + len(tail)})
		if err != nil {
			return nil, false, err
		}
		if len(page) == 0 {
			return tail, false, nil
		}
		if firstUncommitted(page) != 0 {
			return nil, true, nil
		}
		tail = append(tail, page...)
	}
}

func firstUncommitted(ms []contract.Message) int {
	for i, m := range ms {
		if m.CommittedAt == "" {
			return i
		}
	}
	return len(ms)
}

// Result waits for the task to end (following continue-as-new) and returns
// its result. A failed task returns a *contract.Error with the failure's type
// (MODEL_ERROR, INVALID_INPUT, ...) and message; a canceled, terminated or
// timed-out one TASK_CANCELED, TASK_TERMINATED or TASK_TIMED_OUT.
func (c *Client) Result(ctx context.Context, taskID string) (workflows.Result, error) {
	var res workflows.Result
	if err := c.c.GetWorkflow(ctx, taskID, "").Get(ctx, &res); err != nil {
		return res, taskError(taskID, "waiting for", err)
	}
	return res, nil
}
