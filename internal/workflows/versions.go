package workflows

import "go.temporal.io/sdk/workflow"

// Running tasks must replay on a newer worker. Every change to what a task
// accepts or to the commands it issues is therefore gated here with
// workflow.GetVersion, read once at the start of each run (continue-as-new
// starts the next run on the newest rules). Histories recorded on every
// earlier version live in testdata/histories/genN and replay in `make test`.
//
// Code never compares version numbers: it reads the behaviours the run's
// version turns on (t.rules.largeState), which the changelog below names.
const (
	// changeRules names the version of the rules a run follows.
	changeRules = "agent-task-rules"

	// rulesGen1 is the version before any gate: histories of testdata/histories/gen1.
	rulesGen1 = workflow.DefaultVersion
	// rulesOutages: outages are waited out; inputs carry IDs.
	rulesOutages workflow.Version = 1
	// rulesOwnSpaces: every task keeps to its own transcript, its own file
	// space and the operator's storage.
	rulesOwnSpaces workflow.Version = 2
	// rulesTasksAPI: what the Tasks API (docs/tasks-api.md) runs with.
	rulesTasksAPI workflow.Version = 3
	// rulesStreaming: the model's text streamed to the broker.
	rulesStreaming workflow.Version = 4
	// rulesBounds: what one task holds is bounded.
	rulesBounds workflow.Version = 5
	// rulesLargeState: nothing large travels inline.
	rulesLargeState workflow.Version = 6
	// rulesApprovals: activity capabilities and approvals.
	rulesApprovals workflow.Version = 7
	// rulesOperatorUI: the AgentState search attribute.
	rulesOperatorUI workflow.Version = 8
	// rulesCollectedRefs: no collected value is cut.
	rulesCollectedRefs workflow.Version = 9
	// rulesBudgets: nothing wedges a task.
	rulesBudgets workflow.Version = 10
	// rulesMCP: tools of the operator's MCP servers.
	rulesMCP workflow.Version = 11
	// rulesSpending: durable budgets.
	rulesSpending workflow.Version = 12
	// rulesLeanTurns: a turn's history carries what is new.
	rulesLeanTurns workflow.Version = 13
	// rulesOrdinaryOps: ordinary operations never break a live task.
	rulesOrdinaryOps workflow.Version = 14
	// rulesStreamAll: every task streams, tool calls included.
	rulesStreamAll workflow.Version = 15
	// rulesStreamEvents: sub-tasks stream, and what workflow code decides
	// is streamed too.
	rulesStreamEvents workflow.Version = 16
	// rulesClientTools: tools the caller's front end runs.
	rulesClientTools workflow.Version = 17
	// rulesNestedSubTasks: agent trees.
	rulesNestedSubTasks workflow.Version = 18

	// rulesA2AAgents: remote A2A agents as tools.
	rulesA2AAgents workflow.Version = 19

	rulesLatest = rulesA2AAgents
)

// rulesVersion (newer_rules.go) is the version this run follows.

// rules are the behaviours a run follows, each named by what it changes and
// grouped by the concern (and file) it changes. The changelog says which
// version turns each on, and what it does; the zero value is gen1's rules.
type rules struct {
	// Intake: what an input must be, and how it is taken (intake.go,
	// decode.go, bounds.go).
	inputIDs, reservedInputID, sendCheckedOnce, boundedQueue bool
	boundedVariables, cancelNamesTurn, boundedParts          bool
	strictPartKeys, historyFits, historyAndModelKeys         bool
	retryTimeoutKey, trueReceipts                            bool
	// Arrival checks and what status and messages show of them.
	workingWhileChecking, listArriving bool
	// Outages: calls wait them out (outages.go).
	waitOutOutages, subTaskRetryTimeout bool
	// Turns and model calls (turn.go, turn_context.go, stream.go).
	stream, streamAll, streamEvents, callsPerResponse, windowHint, namedTimers, contextByRef bool
	// Capabilities, sub-tasks and MCP (capabilities.go, delegate.go, mcp.go).
	activityCapabilities, activityTimeouts, ownActivityQueue bool
	sharedQueue, mcpTools, mcpHints, subTaskAttributes       bool
	nestedSubTasks, a2aAgents                                bool
	// Approvals (approvals.go).
	approvals, pauseAcrossRuns, pauseDespiteAsks, clientTools bool
	// Budget (budget.go).
	spendBudget, chargeFailures bool
	// Collected values and the output (collected.go, output.go).
	collectedRefs, savedByRef, boundedNames, servedOutputModel, sealAtEnd bool
	// Continue-as-new and large state (continue_as_new.go, largestate.go).
	carryByRef, agentByRef, continueNotCarried, continueYieldsToAsks bool
	continueWhenDue, lenientCarry, rulesMemo                         bool
	// Files and spaces (mounts.go, continuations.go).
	ownSpaces, listedMounts bool
	// Secrets, idleness and the operator's view (secrets.go, idle.go,
	// operator.go).
	secretPrints, idleWaitsForWork, agentStateAttribute bool
}

// changelog is what each rules version turns on, on top of every earlier
// one: what running tasks depend on. A behaviour never moves to another
// version; a new one comes with a new version (and a recorded generation).
var changelog = []struct {
	version workflow.Version
	turnOn  func(*rules)
}{
	{rulesOutages, func(r *rules) {
		// Model calls, the shaping pass, arrival checks and the carried
		// files' copy retry without an attempt limit until modelRetryTimeout
		// and report themselves in status.retrying; model calls heartbeat
		// with a 30 s timeout (outages.go).
		r.waitOutOutages = true
		// StartArgs modelRetryTimeout is accepted (decode.go).
		r.retryTimeoutKey = true
		// A sub-task waits out outages as long as its parent (capabilities.go).
		r.subTaskRetryTimeout = true
		// Inputs carry IDs (input_id, or the send update's ID); a repeated
		// ID creates no second input (intake.go).
		r.inputIDs = true
		// Parameters and exposes may not declare input_id (agent_rules.go).
		r.reservedInputID = true
		// A send's input is checked by the update's validator only, not
		// again by its handler (handlers.go).
		r.sendCheckedOnce = true
		// Status reads working while an input's arrival check or the
		// carried files' copy runs (handlers.go).
		r.workingWhileChecking = true
	}},
	{rulesOwnSpaces, func(r *rules) {
		// A task that continues another (rescue, resume) writes its own
		// transcript (positions below the continued length are read from
		// the earlier task's) and first copies every file its carried
		// conversation references into its own space (continuations.go).
		r.ownSpaces = true
		// Continue-as-new leaves StartArgs continue out: the state holds
		// the carried conversation (continue_as_new.go).
		r.continueNotCarried = true
		// An agent's mount must be one the worker lists (AGENT_MOUNTS,
		// learned through DescribeWorker at start; mounts.go).
		r.listedMounts = true
	}},
	{rulesTasksAPI, func(r *rules) {
		// StartArgs history (committed entries before the first input) and
		// the agent keys topP, reasoningEffort, json and schema are
		// accepted (decode.go).
		r.historyAndModelKeys = true
		// The drain before continue-as-new goes back to the main loop for
		// a waiting ask (the ask update) or a close (continue_as_new.go).
		r.continueYieldsToAsks = true
	}},
	{rulesStreaming, func(r *rules) {
		// StartArgs stream: the model's text is published to the broker as
		// it is written, for the Tasks API's streamed runs (stream.go).
		r.stream = true
	}},
	{rulesBounds, func(r *rules) {
		// QUEUE_FULL beyond MaxQueuedInputs or MaxQueuedBytes (bounds.go).
		r.boundedQueue = true
		// StartArgs variables are at most MaxVariablesBytes (bounds.go).
		r.boundedVariables = true
		// A cancel-turn that names a turn ignores any other (bounds.go).
		r.cancelNamesTurn = true
		// The state carries prints of the secrets, which mask them once the
		// start argument no longer has their values (secrets.go).
		r.secretPrints = true
		// A task busy past its idle deadline sets no timer until the work
		// ends (idle.go).
		r.idleWaitsForWork = true
		// messages lists the inputs in their arrival check after the queue
		// (messages.go).
		r.listArriving = true
	}},
	{rulesLargeState, func(r *rules) {
		// A continue-as-new whose argument would be large goes by reference
		// through the stash (StartArgs carryRef); continuing is never
		// postponed (largestate.go).
		r.carryByRef = true
		// An agent spec over agentInlineBytes reaches activities by
		// reference (largestate.go).
		r.agentByRef = true
		// A saved value (save, an exposes key) over maxSavedBytes is kept
		// whole in the stash, by reference (collected.go).
		r.savedByRef = true
	}},
	{rulesApprovals, func(r *rules) {
		// Capabilities of kind activity run the caller's own activities,
		// on their task queue, their arguments checked against their
		// parameters (capabilities.go).
		r.activityCapabilities = true
		// A call that needs an approval waits for the decide update (or its
		// approvalTimeout), the other calls of the response running at once
		// (approvals.go).
		r.approvals = true
		// A turn waiting for approvals may continue as new (Carry.Paused;
		// approvals.go).
		r.pauseAcrossRuns = true
	}},
	{rulesOperatorUI, func(r *rules) {
		// The AgentState search attribute is upserted when it changes, for
		// tasks whose start set it (operator.go).
		r.agentStateAttribute = true
		// A sub-task of such a task starts with the search attributes too
		// (delegate.go).
		r.subTaskAttributes = true
	}},
	{rulesCollectedRefs, func(r *rules) {
		// A capability's result and a start argument's collected value over
		// maxSavedBytes are kept whole in the stash by reference (the
		// StoreValue activity); a rescued or resumed task copies the values
		// the earlier task kept by reference into its own stash
		// (ContinueFrom collected_refs; collected.go, decode.go).
		r.collectedRefs = true
	}},
	{rulesBudgets, func(r *rules) {
		// An activity capability names its own task queue (never the
		// task's) and none of the runtime's activities (agent_rules.go).
		r.ownActivityQueue = true
		// An activity capability's call is bounded by startTimeout and
		// timeout (capabilities.go).
		r.activityTimeouts = true
		// At most MaxCallsPerResponse tool calls of one response run; the
		// rest are answered with an error (turn.go).
		r.callsPerResponse = true
		// A turn waiting for approvals continues as new when due even while
		// asks wait; they are answered ANSWER_PENDING, their inputs carried
		// (approvals.go, continue_as_new.go). (At most MaxWaitingAsks asks
		// wait at once: the validator's, which needs no gate.)
		r.pauseDespiteAsks = true
		// An input's parts are bounded (parts per message, sizeBytes;
		// arrival.go).
		r.boundedParts = true
		// History entries fit the agent (no required parameters, no
		// exposes) and one inline text part (decode.go).
		r.historyFits = true
		// output.model must be one the worker serves, checked at start
		// (output.go).
		r.servedOutputModel = true
	}},
	{rulesMCP, func(r *rules) {
		// Capabilities of kind mcp offer the tools of an MCP server the
		// worker lists (AGENT_MCP_SERVERS): listed once per run before the
		// first turn (the list recorded in history), each called as an
		// activity with the capability's bounds and approvals, images and
		// resources it returns written to the task's mount (mcp.go).
		r.mcpTools = true
		// An activity capability may run on the task's own queue (an
		// empty taskQueue), as it does on a team's worker that hosts the
		// runtime through the plugin; the runtime's own activity types
		// stay refused (agent_rules.go).
		r.sharedQueue = true
	}},
	{rulesSpending, func(r *rules) {
		// StartArgs budget is accepted: each model call's worst case is
		// reserved against what is left, a call that does not fit waits in
		// awaiting_budget for raise-budget (or fails the task with
		// BUDGET_EXCEEDED), and sub-tasks spend from their parent's budget
		// (budget.go).
		r.spendBudget = true
		// A model call is handed the window start the previous call of
		// the run used, so the window keeps its start fixed (cache-stable
		// requests; turn.go).
		r.windowHint = true
		// Every timer and every activity has a summary the Web UI shows
		// (idle timeout 24h, approval timeout 5m; names.go).
		r.namedTimers = true
	}},
	{rulesLeanTurns, func(r *rules) {
		// What every model call of a run shares (transcript, agent,
		// variables, switches) goes whole with the run's first call and
		// when it changes; the other calls name it by digest, and a worker
		// that has not seen it reads it with the turn-context query
		// (turn_context.go).
		r.contextByRef = true
	}},
	{rulesOrdinaryOps, func(r *rules) {
		// Continue-as-new happens before the next turn once it is due,
		// whatever the queue holds (the queue is carried); at twice the
		// threshold it no longer yields to waiting asks, which are
		// answered ANSWER_PENDING (continue_as_new.go).
		r.continueWhenDue = true
		// Inputs are committed only by a model call that is made: a call
		// the budget refuses hands its inputs back to the queue without
		// committed_at until the call is made, the turn is canceled (a
		// canceled turn commits its inputs) or the task fails (turn.go).
		r.trueReceipts = true
		// The run records its rules version in the AgentRules memo,
		// inherited by the next run; a run continued from newer rules
		// fails its workflow task naming them, until a newer worker takes
		// it (newer_rules.go).
		r.rulesMemo = true
		// A continued run's start argument (written by the runtime) is
		// decoded leniently: fields of newer builds are ignored, not
		// refused; a new task's stays strict (decode.go).
		r.lenientCarry = true
		// A content part with a key parts do not have ("bytes") is refused
		// in a new task's start input and in the input signal, as the send
		// and ask validators refuse it (decode.go, handlers.go).
		r.strictPartKeys = true
		// The task's last entries, its last output's stamp included, are
		// written to the transcript when it ends, whatever the retention
		// setting (agent_task.go).
		r.sealAtEnd = true
		// A model call or shaping attempt that fails for good charges what
		// its requests spent (its failure's detail) to the budget and the
		// task's usage, so a failed sub-task's parent counts it too
		// (budget.go).
		r.chargeFailures = true
		// The built-in save keeps values under at most MaxCollectedNames
		// names; a new name past it is answered with an error the model
		// reads (collected.go).
		r.boundedNames = true
		// A call of an MCP tool its server marks destructive or open-world
		// (or lists without annotations) waits for a person's approval
		// unless the capability's autoApprove names it (approvals.go).
		r.mcpHints = true
	}},
	{rulesStreamAll, func(r *rules) {
		// Every task streams to the worker's broker, whatever its agent
		// declares (StartArgs stream is accepted and changes nothing);
		// each model call of a turn carries its step, which orders its
		// events, and a turn paused for approvals carries its last step
		// across continue-as-new (stream.go, turn.go).
		r.streamAll = true
	}},
	{rulesStreamEvents, func(r *rules) {
		// A sub-task streams under its run's subject (runs.<run>.<path>),
		// and workflow code publishes what it alone decides through the
		// PublishEvents local activity (one marker each): an approval
		// asked for (once, however many runs the turn waits across) and
		// decided, a budget raised while a call waits, a turn canceled or
		// failed, each verdict of the shaping pass; the approvals record
		// notes what it announced (events.go).
		r.streamEvents = true
	}},
	{rulesClientTools, func(r *rules) {
		// An agent may declare client capabilities (agent_rules.go): each
		// call waits as an approval does, and decide approves it with the
		// client's result, which the model reads (approvals.go); decide's
		// "result" is refused for any other approval.
		r.clientTools = true
	}},
	{rulesNestedSubTasks, func(r *rules) {
		// A delegated agent may have capabilities of its own, the tree at
		// most the worker's AGENT_MAX_AGENT_DEPTH deep (read once at the
		// root's start, a side effect); a sub-task of a tree reports its
		// pending approvals and its spend to its parent (subtask-report),
		// which lists them by path and counts them in its budget, and a
		// decision for one is routed down (decide-routed) (tree.go).
		r.nestedSubTasks = true
	}},
	{rulesA2AAgents, func(r *rules) {
		// An agent may declare a2a capabilities (agent_rules.go): a call
		// sends the model's message to the operator-listed remote agent
		// and follows its task with short activities between timers; what
		// the remote task asks waits as an approval (its question listed,
		// decide's result the reply); a cancel-turn, a close or the
		// capability's timeout cancel the remote task (a2a.go).
		r.a2aAgents = true
	}},
}

// rulesFor is the behaviours of rules version v: those its changelog
// entries and every earlier one's turn on.
func rulesFor(v workflow.Version) rules {
	var r rules
	for _, c := range changelog {
		if v >= c.version {
			c.turnOn(&r)
		}
	}
	return r
}

// latestRules are the rules of a new run: what the starter and the Tasks
// API check against before starting.
var latestRules = rulesFor(rulesLatest)
