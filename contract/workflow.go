package contract

import (
	"encoding/json"
	"time"
)

// The AgentTask workflow's contract: every name, argument and reply a
// service codes against, in any language (docs/contract.md). Names are API:
// add, never rename.

// Temporal names.
const (
	DefaultTaskQueue = "agent-tasks"
	WorkflowType     = "AgentTask"

	SignalInput      = "input"       // arg: a TaskIO
	SignalClose      = "close"       // arg ignored
	SignalCancelTurn = "cancel-turn" // optional arg CancelTurnArgs
	// SignalRetrying is sent by the runtime's own activities while a model
	// call or an arrival check waits out an outage (arg: a retry report);
	// it only feeds status.retrying. Services do not send it.
	SignalRetrying = "retrying"
	// SignalSubTaskReport is sent by a sub-task of a tree to its parent
	// (arg: its pending approvals and what it spent so far); SignalDecideRouted
	// carries a decision the root received for an approval of a sub-task
	// down the tree (arg: DecideArgs, its id the path below the receiver).
	// The runtime sends both; services do not.
	SignalSubTaskReport = "subtask-report"
	SignalDecideRouted  = "decide-routed"

	UpdateSend = "send" // arg: a TaskIO; returns SendResult
	// UpdateAsk queues an input like send and replies once the output that
	// answers it is committed (arg: a TaskIO; returns AskResult). A turn
	// that is canceled, or a task that ends first, fails the update.
	UpdateAsk = "ask"

	QueryStatus    = "status"    // returns Status
	QueryMessages  = "messages"  // optional arg MessagesPage; returns []Message
	QueryCollected = "collected" // returns []Collected: what the task has saved, oldest first
	QueryDescribe  = "describe"  // returns Describe

	// UpdateDecide decides a pending approval (arg: DecideArgs; returns the
	// Approval with its decision). The validator refuses an unknown ID
	// (APPROVAL_NOT_FOUND) or a decided one (APPROVAL_DECIDED).
	UpdateDecide = "decide"
	// QueryApprovals returns []Approval: the pending approvals and the last
	// decided ones, oldest first.
	QueryApprovals = "approvals"

	// Search attributes (Keyword), set at start by the starter; registered by the dev server.
	SearchAttributeAgentName  = "AgentName"
	SearchAttributeAgentModel = "AgentModel"
	// SearchAttributeAgentState (Keyword) is active, retrying,
	// awaiting_approval or shaping: what an operator lists running tasks by.
	// The starter sets it at start; the task upserts it when it changes,
	// only if its start carried it (so a server without
	// the attribute registered runs tasks the same, unlisted).
	SearchAttributeAgentState = "AgentState"
)

// Mode says when a task ends.
type Mode string

const (
	ModeConversation Mode = "conversation" // until close or the idle timeout
	ModeSingle       Mode = "single"       // after its first output
)

// State of a task, as `status` reports it.
type State string

const (
	StateWaiting State = "waiting"
	StateWorking State = "working"
	// StateAwaitingApproval: a turn waits for a person to decide on a
	// capability call (status.approvals counts the pending ones).
	StateAwaitingApproval State = "awaiting_approval"
	StateShaping          State = "shaping" // the output pass runs
	StateCompleted        State = "completed"
	StateFailed           State = "failed"
	StateCanceled         State = "canceled"
)

// DefaultIdleTimeout ends a conversation nobody has written to for a day.
const DefaultIdleTimeout = 24 * time.Hour

// StartArgs is the workflow's one argument.
type StartArgs struct {
	Agent AgentSpec `json:"agent"`
	Input *TaskIO   `json:"input,omitempty"`
	Mode  Mode      `json:"mode,omitempty"` // default conversation
	// IdleTimeout (a Go duration such as "30m") ends a conversation that has
	// had no input and no running turn for that long. Default 24h.
	IdleTimeout string `json:"idleTimeout,omitempty"`
	// ModelRetryTimeout (a Go duration, default "24h", at most "168h") is
	// how long model calls and arrival checks wait out an outage (429, 5xx,
	// timeouts, connection errors, 401/403, a provider this worker does not
	// serve, unavailable storage) before the task fails with MODEL_ERROR.
	ModelRetryTimeout string `json:"modelRetryTimeout,omitempty"`
	// ContinueAsNewEvents, when positive, continues as new once a run's history
	// reaches that many events, in addition to whenever Temporal suggests it.
	ContinueAsNewEvents int `json:"continueAsNewEvents,omitempty"`

	// Variables fill {{name}} placeholders in the agent's instructions.
	Variables map[string]json.RawMessage `json:"variables,omitempty"`
	// Secrets names variables whose values are masked: never in a model
	// request, a log line, an activity argument or result.
	Secrets []string `json:"secrets,omitempty"`
	// Collected holds what earlier runs of the same task saved: the run
	// starts with them as variables (Variables win a clash) and recalls them.
	Collected map[string]json.RawMessage `json:"collected,omitempty"`
	// Output asks for the caller's JSON when the task is done (docs/output.md).
	Output *OutputSpec `json:"output,omitempty"`
	// Continue makes the task continue an earlier task's conversation (the
	// starter's rescue and resume fill it): its messages come first, read
	// from that task's transcript.
	Continue *ContinueFrom `json:"continue,omitempty"`

	// History is an earlier conversation, oldest first: committed entries
	// before the first input (user: inputs, assistant: outputs).
	History []HistoryMessage `json:"history,omitempty"`

	// Stream publishes the model's text as it is written: events on the
	// broker's subject runs.<task ID> (docs/streaming.md), which the Tasks
	// API serves as server-sent events. Only for agents that answer in plain
	// text or JSON (no capabilities, exposes, mount or output) and task IDs
	// of letters, digits, '-' and '_'. A worker without a broker runs the
	// task all the same; its text is then not streamed.
	Stream bool `json:"stream,omitempty"`

	// Budget bounds what the task and its sub-tasks spend on model calls
	// (budget.go). A rescued or resumed task is given
	// what is left of the earlier task's, unless the caller sets its own.
	Budget *Budget `json:"budget,omitempty"`
}

// ContinueFrom names an earlier task's conversation: its transcript, its
// committed length, and the entries from its last output on (which that task
// may not have made final), plus its inputs that were never committed.
type ContinueFrom struct {
	// TaskID and FirstRunID name the earlier task's transcript; From and
	// Parent complete its key when it continues yet another task.
	TaskID     string          `json:"task_id"`
	FirstRunID string          `json:"first_run_id"`
	From       int             `json:"from,omitempty"`
	Parent     *TranscriptLink `json:"parent,omitempty"`
	// Source is the earlier task's ID: the space its files are in (files of
	// a task that shared its transcript may be in TaskID's space).
	Source   string    `json:"source,omitempty"`
	Length   int       `json:"length"`
	TailFrom int       `json:"tail_from"`
	Tail     []Message `json:"tail,omitempty"`
	Queued   []Message `json:"queued,omitempty"`
	// CollectedRefs are the references of the StartArgs collected values
	// the earlier task kept by reference (their previews are in
	// collected): the new task copies each from the earlier task's stash
	// into its own.
	CollectedRefs map[string]ValueRef `json:"collected_refs,omitempty"`
}

// HistoryMessage is one message of StartArgs.history.
type HistoryMessage struct {
	Role    string `json:"role"` // user | assistant
	Content string `json:"content"`
}

// Bounds of what a task holds: inputs received and not yet
// committed, and the start argument's variables (serialised).
const (
	MaxQueuedInputs   = 100
	MaxQueuedBytes    = 1 << 20
	MaxVariablesBytes = 256 << 10
)

// CancelTurnArgs is the optional argument of the cancel-turn signal: with
// a turn, only that turn is canceled (a late signal for an earlier turn
// changes nothing).
type CancelTurnArgs struct {
	Turn int `json:"turn,omitempty"`
}

// Bounds of StartArgs.history.
const (
	MaxHistoryMessages = 100
	MaxHistoryBytes    = 256_000 // all contents together
)

// AskResult is the reply of the ask update.
type AskResult struct {
	ReceivedAt string   `json:"received_at"`
	Output     TaskIO   `json:"output"` // committed_at set
	Turn       TurnInfo `json:"turn"`   // the turn that answered: stop_reason, model, usage
}

// Collected is one value the task saved: an exposes key of an output, a
// value saved by the model with `save`, or a capability's result. A value
// over maxSavedBytes saved by `save` or an exposes key is
// kept whole in the task's stash: Ref names it there, and Value is its
// preview, cut to 1,000 characters ending in "…".
type Collected struct {
	Name  string          `json:"name"`
	Value json.RawMessage `json:"value"`
	Ref   *ValueRef       `json:"ref,omitempty"`
}

// Describe is the reply of the `describe` query.
type Describe struct {
	Agent            string `json:"agent"`
	Model            string `json:"model"`
	Mode             Mode   `json:"mode"`
	OutputRequested  bool   `json:"output_requested"`
	OutputConfigured bool   `json:"output_configured"` // an output model is known (the task's or the worker's)
	OutputModel      string `json:"output_model,omitempty"`
	// Transcript is where the conversation lives: the task's own, whose
	// first positions may be read from the task it continues (a task of an
	// early release shares the transcript of the task it continues).
	TranscriptTaskID     string        `json:"transcript_task_id"`
	TranscriptFirstRunID string        `json:"transcript_first_run_id"`
	Transcript           TranscriptKey `json:"transcript"`
	// Durable is how many entries are final in the transcript; later ones
	// are held by the task until its next activity writes them.
	Durable int `json:"durable"`
}

// SendResult is the reply of the `send` update, once the input is queued.
type SendResult struct {
	ReceivedAt string `json:"received_at"`
}

// Retrying describes the call now waiting out an outage, in `status`.
type Retrying struct {
	Type     string `json:"type"`     // MODEL_UNAVAILABLE (the model provider) or INTERNAL (storage)
	Message  string `json:"message"`  // the last error
	Attempts int    `json:"attempts"` // attempts failed so far
	Since    string `json:"since"`    // when the first attempt failed
	NextAt   string `json:"next_at"`  // when the next attempt starts
}

// Usage counts tokens. InputTokens counts every prompt token, cached ones
// included; CacheReadTokens of them were read from the provider's prompt
// cache and CacheWriteTokens written to it (both 0 where the provider has none).
type Usage struct {
	InputTokens      int `json:"inputTokens"`
	OutputTokens     int `json:"outputTokens"`
	CacheReadTokens  int `json:"cacheReadTokens,omitempty"`
	CacheWriteTokens int `json:"cacheWriteTokens,omitempty"`
}

// Add sums usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{InputTokens: u.InputTokens + o.InputTokens, OutputTokens: u.OutputTokens + o.OutputTokens,
		CacheReadTokens: u.CacheReadTokens + o.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens + o.CacheWriteTokens}
}

// ErrorInfo is a typed error as `status` and results report it.
type ErrorInfo struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// Rejection records an input refused on arrival by signal (an update's
// caller gets the error instead).
type Rejection struct {
	Type    string `json:"type"`
	Message string `json:"message"`
	At      string `json:"at"`
}

// TurnInfo describes one turn: one model call and the inputs it committed.
type TurnInfo struct {
	Turn        int    `json:"turn"`
	Inputs      int    `json:"inputs"`                // inputs this turn committed
	CommittedAt string `json:"committed_at"`          // when they entered the conversation
	StopReason  string `json:"stop_reason,omitempty"` // end | max_tokens | refused; empty while running or when canceled
	Canceled    bool   `json:"canceled,omitempty"`
	Model       string `json:"model,omitempty"`
	Usage       Usage  `json:"usage"`
}

// Status is the reply of the `status` query.
type Status struct {
	State  State      `json:"state"`
	Turns  int        `json:"turns"`  // turns started (model calls committed), canceled ones included
	Queued int        `json:"queued"` // inputs received, not yet committed
	Usage  Usage      `json:"usage"`
	Error  *ErrorInfo `json:"error"` // null unless failed
	// Retrying is null, or the call now waiting out an outage (the state
	// stays working meanwhile).
	Retrying *Retrying `json:"retrying"`

	Mode          Mode       `json:"mode"`
	Outputs       int        `json:"outputs"`
	Messages      int        `json:"messages"` // length of the messages list
	Closing       bool       `json:"closing"`
	Rejected      int        `json:"rejected"`
	LastRejection *Rejection `json:"last_rejection,omitempty"`
	LastTurn      *TurnInfo  `json:"last_turn,omitempty"`
	RecentTurns   []TurnInfo `json:"recent_turns,omitempty"` // the last few turns, oldest first
	Run           int        `json:"run"`                    // 1 + continue-as-new count
	EndedBy       string     `json:"ended_by,omitempty"`     // close | single | idle | finish, once completed
	// Approvals counts the capability calls waiting for a decision.
	Approvals int `json:"approvals"`
	// Budget is the task's budget, used and left; absent without one.
	Budget *BudgetStatus `json:"budget,omitempty"`
}

// Approval is a capability call that waits for a person's decision before
// it runs. Approvals are not entries of `messages`.
type Approval struct {
	ID          string          `json:"id"` // t<turn>.c<n>: the turn's n-th capability call
	Capability  string          `json:"capability"`
	Arguments   json.RawMessage `json:"arguments"`
	Turn        int             `json:"turn"`
	RequestedAt string          `json:"requested_at"`
	Decision    *Decision       `json:"decision"` // null while pending
	// TaskID is the sub-task that waits for it, when it is not the task
	// asked (its ID then is a path: "t2.c1/t1.c3", the delegate calls down
	// to the approval).
	TaskID string `json:"task_id,omitempty"`
	// CallID is the model's ID of the call (a stream's tool call names it).
	CallID string `json:"call_id"`
	// Client: the call is of a client capability, which the caller's front
	// end runs; decide approves it with the call's "result".
	Client bool `json:"client,omitempty"`
	// Question is what a remote agent (an a2a capability's call) asks the
	// user: decide answers it, its "result" the reply sent back (without
	// one: "Approved."); refusing it cancels the remote task. Its ID is the
	// call's and the question's number: "t1.c2.i1".
	Question string `json:"question,omitempty"`
}

// Decision is how an approval was decided: by a person (decide), or by the
// runtime (reason "approval timed out", "task closed", "turn canceled").
type Decision struct {
	Approve   bool   `json:"approve"`
	Reason    string `json:"reason,omitempty"`
	By        string `json:"by,omitempty"`
	DecidedAt string `json:"decided_at"`
}

// DecideArgs is the decide update's argument. approve is required.
type DecideArgs struct {
	ID      string `json:"id"`
	Approve *bool  `json:"approve"`
	Reason  string `json:"reason,omitempty"` // at most 2,000 bytes; shown to the model when denied
	By      string `json:"by,omitempty"`     // who decided, at most 256 bytes
	// Result is what the front end's run of a client capability's call
	// returned, as the model reads it (at most MaxClientResultBytes):
	// required to approve such a call, refused for any other.
	Result *string `json:"result,omitempty"`
}

// Values of the AgentState search attribute.
const (
	AgentStateActive           = "active"
	AgentStateRetrying         = "retrying"
	AgentStateAwaitingApproval = "awaiting_approval"
	AgentStateShaping          = "shaping"
)

// Approval decision reasons the runtime writes.
const (
	ReasonApprovalTimedOut = "approval timed out"
	ReasonTaskClosed       = "task closed"
	ReasonTurnCanceled     = "turn canceled"
)

// MessagesPage asks `messages` for entries [After, After+Limit) of the list.
// Limit 0 means as many as fit MaxPageBytes. A reply is never larger than
// MaxPageBytes (but always holds at least one entry when one exists).
type MessagesPage struct {
	After int `json:"after"`
	Limit int `json:"limit"`
}

// Bounds of query replies.
const (
	MaxPageBytes     = 400 << 10 // a page reply stays under the 512 KiB payload warning
	MaxFullListBytes = 2 << 20   // `messages` without a page; longer conversations must page
)

// Result is the workflow's result when it completes.
type Result struct {
	State      State   `json:"state"`
	Turns      int     `json:"turns"`
	Usage      Usage   `json:"usage"`
	LastOutput *TaskIO `json:"last_output"`
	EndedBy    string  `json:"ended_by"` // close | single | idle | finish
	Messages   int     `json:"messages"`
	// Result is the shaped JSON, when the task asked for output; Records are
	// the values it was shaped from (secrets masked).
	Result  json.RawMessage `json:"result,omitempty"`
	Records []Collected     `json:"records,omitempty"`
	// Budget is the task's budget as it ended; absent without one.
	Budget *BudgetStatus `json:"budget,omitempty"`
}

// How a task ended.
const (
	EndedByClose  = "close"
	EndedBySingle = "single"
	EndedByIdle   = "idle"
	EndedByFinish = "finish" // the model called the built-in finish capability
)

// Update budgets. Temporal admits at most 10 updates in
// flight per workflow and 2,000 per run; an ask holds its slot until its
// turn answers. At most MaxWaitingAsks asks wait at once, so decide, send
// and other updates always find a slot; beyond, an ask is refused with
// ErrAsksFull (send the input with `send` and read the answer with
// `messages`, or ask again once one is answered).
const (
	MaxWaitingAsks = 5
	// MaxUpdatesInFlight bounds the send and ask updates a task runs at
	// once, asks and those waiting for an arrival check or a state read
	// back included, so decide, raise-budget and the caller's other
	// updates always find one of Temporal's ten slots; beyond, a send or
	// an ask is refused with ErrQueueBusy: retry in a moment, or send it
	// as the input signal, which takes no slot.
	MaxUpdatesInFlight = 6
)

// MaxCallsPerResponse bounds the tool calls of one model response that run;
// the model reads an error for each call past it.
const MaxCallsPerResponse = 16
