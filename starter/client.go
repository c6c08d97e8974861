// Package starter is the Go client of the runtime: public API a team may
// import to start agent tasks (AgentTask workflows) and talk to them (send,
// signal, status, messages, close, cancel-turn, result, approvals and their
// decisions, rescue, resume, uploads to a mount), with Temporal's errors
// turned into the runtime's typed errors (*contract.Error). The `starter`
// command (cmd/starter) is a command line over it.
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
	"unicode"
	"unicode/utf8"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/mount"
	"github.com/agenttask/agenttask/internal/transcript"
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
	// transcripts, when set (ReadTranscripts), serves the messages of tasks
	// Temporal no longer has (messages_transcript.go).
	transcripts *transcript.Store
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
func (c *Client) CheckMounts(mounts Mounts) *Client {
	c.mounts = mounts
	return c
}

// New wraps a Temporal client. taskQueue "" means contract.DefaultTaskQueue.
func New(c client.Client, taskQueue string) *Client {
	if taskQueue == "" {
		taskQueue = contract.DefaultTaskQueue
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
	// Budget (rescue and resume) is the new task's budget; nil: what is
	// left of the earlier task's, when it had one.
	Budget *contract.Budget
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
		temporal.NewSearchAttributeKeyKeyword(contract.SearchAttributeAgentName).ValueSet(agent.Name),
		temporal.NewSearchAttributeKeyKeyword(contract.SearchAttributeAgentModel).ValueSet(agent.Model),
		temporal.NewSearchAttributeKeyKeyword(contract.SearchAttributeAgentState).ValueSet(contract.AgentStateActive),
	)
}

// Summary is the one line the Web UI shows for a task.
func Summary(args contract.StartArgs) string {
	mode := args.Mode
	if mode == "" {
		mode = contract.ModeConversation
	}
	return fmt.Sprintf("agent %s · %s · %s", args.Agent.Name, args.Agent.Model, mode)
}

// Start validates args exactly as the workflow will (the same checks, and
// contract.CheckPartKeys on an input decoded from JSON) and, only when they
// pass, starts the task. A refusal is the *contract.Error
// itself and nothing is started. It returns the task ID.
func (c *Client) Start(ctx context.Context, start contract.StartArgs, o StartOptions) (string, error) {
	args := workflows.StartArgs{StartArgs: start}
	if _, err := workflows.CheckStart(&args); err != nil {
		return "", err
	}
	if args.Input != nil { // decoding dropped them: the task would never see them
		if err := contract.CheckPartKeys(*args.Input); err != nil {
			return "", contract.Invalid("input: %s", contract.MessageOf(err))
		}
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
		StaticSummary:                            Summary(args.StartArgs),
		StaticDetails:                            Details(args.StartArgs), // details.go: the Web UI's Details panel
		Memo:                                     o.Memo,
	}
	_, err := c.c.ExecuteWorkflow(ctx, opts, contract.WorkflowType, args)
	if err != nil && SearchAttributesRefused(err) {
		// A plain Temporal server may not have the attributes registered:
		// the task runs the same without them.
		opts.TypedSearchAttributes = temporal.SearchAttributes{}
		_, err = c.c.ExecuteWorkflow(ctx, opts, contract.WorkflowType, args)
	}
	if err != nil {
		return "", taskError(id, "starting", err)
	}
	return id, nil
}
