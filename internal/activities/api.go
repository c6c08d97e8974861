// Package activities holds the work AgentTask delegates: model calls and
// transcript writes. This file is their contract with the workflow: names and
// one input and one result struct per activity. Names are API: add, never rename.
package activities

import (
	"encoding/json"

	"github.com/agenttask/agenttask/contract"
)

// Registered activity names.
const (
	ModelTurnName    = "ModelTurn"
	WriteEntriesName = "WriteEntries"
)

// TranscriptKey names a task's append-only transcript and TranscriptLink
// the transcript a continuation reads its first positions from (the
// contract's types: they appear in describe and StartArgs.continue).
type (
	TranscriptKey  = contract.TranscriptKey
	TranscriptLink = contract.TranscriptLink
)

// PositionedEntry is a committed entry and its position in the messages list.
type PositionedEntry struct {
	Position int              `json:"position"`
	Entry    contract.Message `json:"entry"`
}

// OutputStamp finalises an output that the turn producing it stored as
// pending: the workflow learns its committed_at only when the result arrives,
// so the next call stamps it instead of sending the whole output back.
type OutputStamp struct {
	Position    int    `json:"position"`
	Turn        int    `json:"turn"`
	CommittedAt string `json:"committed_at"`
}

// Entries is what a call makes durable in the transcript before it reads it.
type Entries struct {
	Write  []PositionedEntry `json:"write,omitempty"`
	Stamps []OutputStamp     `json:"stamps,omitempty"`
}

// ModelTurnInput carries only what is new since the last durable point and a
// reference to the rest, so the history a turn adds does not grow with the
// conversation.
type ModelTurnInput struct {
	// TurnContext is what every call of the run shares (turn_context.go):
	// the transcript, the agent and the run's switches. It is nil when
	// Context names it by digest (its JSON keys are then absent), and the
	// worker fills it in before anything reads it (resolveContext).
	*TurnContext
	Turn int `json:"turn"`
	// Step is the turn's model call (1-based; 0 in older inputs): its
	// streamed events are ordered by it (broker.Position).
	Step int `json:"step,omitempty"`
	Entries
	// End is the length of the conversation once Entries are written: the
	// window the model reads ends there, and the output takes position End.
	End int `json:"end"`
	// TurnFrom is the position of the first input this call commits:
	// capability conditions see [TurnFrom, End) as `i`.
	TurnFrom int `json:"turn_from"`
	// Scratch is this turn's capability exchange so far.
	Scratch []ScratchMessage `json:"scratch,omitempty"`
	// Recall is the last saved values, shown as already_collected.
	Recall []Recalled `json:"recall,omitempty"`
	// Budget, when set, is what is left of the task's budget (budget.go).
	Budget *BudgetCheck `json:"budget,omitempty"`
	// WindowFrom is the window start the run's previous call used (its
	// result's WindowFrom; 0: none): the window keeps it while it fits,
	// so the request's prefix stays the same (cache-stable requests).
	WindowFrom int `json:"window_from,omitempty"`
	// Context, when set, is the digest of the run's TurnContext: the run's
	// first call carries both, and every other call the digest alone until
	// the context changes.
	Context string `json:"context,omitempty"`
	Retry
}

// ModelTurnResult is one turn's answer. Output has no committed_at yet: the
// workflow stamps it when the result enters the conversation.
type ModelTurnResult struct {
	Output     contract.TaskIO `json:"output"`
	StopReason string          `json:"stop_reason"` // end | max_tokens | refused
	Model      string          `json:"model"`
	Usage      Usage           `json:"usage"`
	Calls      int             `json:"calls"`       // model requests this turn needed (structured-output retries)
	WindowFrom int             `json:"window_from"` // first position the model was shown
	// ToolCalls, when set, are capability calls to run before the model is
	// called again; Output is then empty.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// Offered names the capabilities this call offered (conditions held):
	// the workflow runs no other. Always present (possibly empty) in results
	// of this version; absent in older histories, which replay unchecked.
	Offered []string `json:"offered"`
	// ValueRefs are the output's exposes values stored by reference, by key
	// (LargeValues set; values.go). The output itself keeps them whole.
	ValueRefs map[string]ValueRef `json:"value_refs,omitempty"`
	// BudgetShort, when set, is the worst case of a request the budget
	// refused: no request was sent for it, Output is empty, and Usage is
	// what the call's earlier requests used (budget.go).
	BudgetShort *contract.Spend `json:"budget_short,omitempty"`
	// RequestBytes is the size of the call's last request, PrefixBytes how
	// many of them, from the start, it shared with the task's previous
	// request on this worker (0 when none is known): what a provider's
	// prompt cache can bill at its cached price (prefix.go).
	RequestBytes int `json:"request_bytes,omitempty"`
	PrefixBytes  int `json:"prefix_bytes,omitempty"`
}

// Usage is what a call's model requests used: their tokens, and their
// cost in Units. Its JSON is contract.Usage's keys with units beside them
// (the embedded struct's fields are flattened).
type Usage struct {
	contract.Usage
	// Units are the calls' cost at the worker's catalogue prices, counted
	// only for a task with a budget (budget.go).
	Units int64 `json:"units,omitempty"`
}

// WriteEntriesInput makes entries durable without a model call: used when a
// turn commits more than one activity argument should carry.
type WriteEntriesInput struct {
	Transcript TranscriptKey `json:"transcript"`
	Entries
}

// Limits on what one activity argument carries; both are well under the
// 512 KiB payload warning.
const (
	MaxEntriesBytes = 256 << 10
	MaxOutputBytes  = contract.MaxInputBytes // an output obeys the same bound as an input
)

// More registered activity names.
const (
	CheckInputName = "CheckInput"
)

// CheckInputInput asks for the checks an input needs before it is queued:
// its file parts stated in the task's mount (size and sha256 recorded on
// the part) and the agent's guardrails run with the committed conversation
// as `context`.
type CheckInputInput struct {
	Transcript TranscriptKey      `json:"transcript"`
	Agent      contract.AgentSpec `json:"agent"`
	AgentRef   *StashRef          `json:"agent_ref,omitempty"` // as in ModelTurnInput
	Input      contract.TaskIO    `json:"input"`
	Entries                       // made durable first, so `context` sees every committed entry
	End        int                `json:"end"`               // committed entries [0, End) form `context`
	TaskID     string             `json:"task_id,omitempty"` // the task's file space; "" in older arguments
	Retry
}

// CheckInputResult is the input as it will be queued.
type CheckInputResult struct {
	Input contract.TaskIO `json:"input"`
}

// Capability-related activity names.
const (
	CopyFilesName = "CopyFiles"
)

// ToolCall is a capability call the model asked for.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	Signature []byte `json:"signature,omitempty"` // llm.ToolCall.Signature, sent back with the call
}

// ScratchMessage is part of a turn's capability exchange: the model's calls
// and their results. It is shown to the model for the rest of the turn,
// before the entries at position At (inputs committed after the call).
type ScratchMessage struct {
	At         int                    `json:"at"`
	ToolCalls  []ToolCall             `json:"tool_calls,omitempty"` // the model's calls
	ToolCallID string                 `json:"tool_call_id,omitempty"`
	Content    string                 `json:"content,omitempty"` // a call's result
	Files      []contract.ContentPart `json:"files,omitempty"`   // files a result brought into the task's mount
}

// CopyFilesInput copies objects from one task's mount into another's; the
// parts name objects in the source space.
type CopyFilesInput struct {
	Src       contract.MountSpec     `json:"src"`
	SrcTask   string                 `json:"src_task"`
	Parts     []contract.ContentPart `json:"parts"`
	Dst       contract.MountSpec     `json:"dst"`
	DstTask   string                 `json:"dst_task"`
	DstPrefix string                 `json:"dst_prefix,omitempty"` // folder in the destination space
	// Carried, when set, makes this the start of a continuation (rescue,
	// resume): the files are those of the carried conversation (Parts holds
	// the ones of its inline tail and queue) and SrcTask is unused.
	Carried *CarriedFiles `json:"carried,omitempty"`
	Retry
}

// CarriedFiles asks for the files of a conversation a new task continues.
type CarriedFiles struct {
	// Transcript is the new task's; it reads positions [0, End) from the
	// continued task's transcript, Source (whose link is recorded too).
	Transcript TranscriptKey `json:"transcript"`
	Source     TranscriptKey `json:"source"`
	End        int           `json:"end"`
	// Spaces are the tasks whose spaces may hold the files, tried in order.
	Spaces []string `json:"spaces"`
}

// CopyFilesResult holds the parts re-referenced in the destination mount,
// checked (size, sha256) like any arriving file part. For carried files it
// holds counts only: where each file went is stored beside the new task's
// transcript (CarriedName) and read by its model turns.
type CopyFilesResult struct {
	Parts       []contract.ContentPart `json:"parts"`
	Carried     int                    `json:"carried,omitempty"`     // files copied
	Unavailable []string               `json:"unavailable,omitempty"` // references not copied (at most 20 listed)
}

// Output-related activity names.
const (
	DescribeWorkerName = "DescribeWorker"
	ShapeName          = "Shape"
)

// WorkerDescription is what the workflow may know of the worker's
// configuration; it learns it through DescribeWorker, never by reading it.
type WorkerDescription struct {
	OutputModel string `json:"output_model,omitempty"` // the default model of the shaping pass
	// Mounts are the storage agents may name (AGENT_MOUNTS: name to URL).
	Mounts map[string]string `json:"mounts,omitempty"`
	// Providers are the model providers the worker serves, sorted (nil: it
	// does not say, and nothing is refused for it).
	Providers []string `json:"providers,omitempty"`
}

// Recalled is a saved value as a model request shows it.
type Recalled struct {
	Name  string `json:"name"`
	Value string `json:"value"` // at most 120 characters; a list as its length and first item
}

// ShapeInput is one shaping attempt: the goal, the caller's instructions and
// schema, the saved values (secrets masked, at most 60,000 characters), and
// the previous attempt's answer and violations when this is a retry.
type ShapeInput struct {
	TaskID       string               `json:"task_id"`
	Model        string               `json:"model"`
	Goal         string               `json:"goal"`
	Instructions string               `json:"instructions"`
	Schema       json.RawMessage      `json:"schema,omitempty"`
	Records      string               `json:"records"`
	Attempt      int                  `json:"attempt"`
	Previous     string               `json:"previous,omitempty"`
	Violations   []contract.Violation `json:"violations,omitempty"`
	// Stash, when set, holds the values Records names by reference (a
	// record's "ref"): the activity reads them whole, then leaves out the
	// oldest past ShapeRecordsBytes (values.go).
	Stash *TranscriptKey `json:"stash,omitempty"`
	// Budget is as in ModelTurnInput.
	Budget *BudgetCheck `json:"budget,omitempty"`
	Retry
}

// ShapeResult is the model's object (not yet validated: the workflow does).
type ShapeResult struct {
	Object json.RawMessage `json:"object"`
	Raw    string          `json:"raw"`
	Usage  Usage           `json:"usage"`
	// BudgetShort is as in ModelTurnResult.
	BudgetShort *contract.Spend `json:"budget_short,omitempty"`
}

// Task returns the ID of the task whose file space a call uses.
func (in ModelTurnInput) Task() string {
	if in.TurnContext == nil { // named by digest and not filled in yet
		return ""
	}
	if in.TaskID != "" {
		return in.TaskID
	}
	return in.Transcript.TaskID
}

// Task returns the ID of the task whose file space a check uses.
func (in CheckInputInput) Task() string {
	if in.TaskID != "" {
		return in.TaskID
	}
	return in.Transcript.TaskID
}

// SignalRetrying is the signal an activity sends its task while it waits out
// an outage: for the first ten failed attempts, then every fifth (so a day of
// retries adds a few hundred history events, not thousands).
const SignalRetrying = contract.SignalRetrying

// RetryReport is the argument of SignalRetrying: Call names the workflow's
// call (the workflow ignores reports of calls no longer waiting).
type RetryReport struct {
	Call     string `json:"call"`
	Type     string `json:"type"`
	Message  string `json:"message"`
	Attempts int    `json:"attempts"`
	At       string `json:"at"`      // when this attempt failed
	NextAt   string `json:"next_at"` // when the next one starts
}

// Retry is what an activity needs to wait out an outage: the workflow's name
// for the call and the task's modelRetryTimeout (a Go duration). Empty in
// arguments of tasks on older rules, which keep the fixed attempt count of
// their retry policy.
type Retry struct {
	Call    string `json:"call,omitempty"`
	Timeout string `json:"retry_timeout,omitempty"`
}
