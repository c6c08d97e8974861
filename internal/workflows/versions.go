package workflows

import "go.temporal.io/sdk/workflow"

// Running tasks must replay on a newer worker. Every change to what a task
// accepts or to the commands it issues is therefore gated here with
// workflow.GetVersion, read once at the start of each run (continue-as-new
// starts the next run on the newest rules). Histories recorded on every
// earlier version live in testdata/histories/genN and replay in `make test`.
const (
	// changeRules names the version of the rules a run follows.
	changeRules = "agent-task-rules"

	// rulesGen1 is the version before any gate: histories of testdata/histories/gen1.
	rulesGen1 = workflow.DefaultVersion
	// rulesOutages: model calls and arrival checks wait out outages for
	// modelRetryTimeout and report themselves in status.retrying; model
	// calls heartbeat with a 30 s timeout; inputs carry IDs (input_id, or
	// the send update's ID) and a repeated ID creates no second input;
	// inputs are checked only by the update's validator, not again by its
	// handler; parameters and exposes may not declare input_id.
	rulesOutages workflow.Version = 1

	// rulesOwnSpaces: every task keeps to its own transcript, its own file
	// space and the operator's storage. A task that continues another
	// (rescue, resume) writes its own transcript (positions below the
	// continued length are read from the earlier task's) and first copies
	// every file its carried conversation references into its own space
	// (CopyFiles with carried); an agent's mount must be one the worker
	// lists (AGENT_MOUNTS, learned through DescribeWorker at start).
	rulesOwnSpaces workflow.Version = 2

	// rulesTasksAPI: what the Tasks API (seed 004) runs with: the agent keys
	// topP, reasoningEffort, json and schema; StartArgs history (committed
	// entries before the first input); the ask update.
	rulesTasksAPI workflow.Version = 3

	// rulesStreaming: StartArgs stream (the model's text published to the
	// broker as it is written, for the Tasks API's streamed runs).
	rulesStreaming workflow.Version = 4

	// rulesBounds: a bounded queue (QUEUE_FULL beyond MaxQueuedInputs or
	// MaxQueuedBytes), cancel-turn that names a turn ignores any other,
	// StartArgs variables at most MaxVariablesBytes.
	rulesBounds workflow.Version = 5

	// rulesLargeState: nothing large travels inline. A continue-as-new
	// whose argument would be large goes by reference through the stash
	// (continuations are never postponed); an agent spec over
	// agentInlineBytes reaches activities by reference; a saved value over
	// maxSavedBytes is kept whole in the stash, by reference.
	rulesLargeState workflow.Version = 6

	// rulesApprovals: capabilities of kind activity (the caller's own
	// activities, on their task queue) and approvals: a call that needs one
	// waits for the decide update (or its approvalTimeout), the other calls
	// of the response running at once; a turn waiting for approvals may
	// continue as new (Carry.Paused).
	rulesApprovals workflow.Version = 7

	// rulesOperatorUI: the AgentState search attribute is upserted when it
	// changes (operator.go), for tasks whose start set it.
	rulesOperatorUI workflow.Version = 8

	// rulesCollectedRefs: no collected value is cut. A capability's result
	// and a start argument's collected value over maxSavedBytes are kept
	// whole in the stash by reference (the StoreValue activity), like saved
	// values since rulesLargeState; a rescued or resumed task copies the
	// values the earlier task kept by reference into its own stash
	// (ContinueFrom collected_refs).
	rulesCollectedRefs workflow.Version = 9

	// rulesBudgets: nothing wedges a task. At most MaxWaitingAsks asks
	// wait at once (ASKS_FULL beyond, in the validator), so decide, send
	// and the caller's other updates always find one of Temporal's ten
	// in-flight slots; a turn waiting for approvals continues as new when
	// due even while asks wait (they are answered ANSWER_PENDING, their
	// inputs carried); an activity capability names its own task queue
	// (never the task's) and none of the runtime's activities, and its
	// call is bounded by startTimeout and timeout; at most
	// MaxCallsPerResponse tool calls of one response run (the rest are
	// answered with an error).
	rulesBudgets workflow.Version = 10

	rulesLatest = rulesBudgets
)

// rulesVersion is the version this run follows: the newest for a new run,
// the recorded one on replay.
func rulesVersion(ctx workflow.Context) workflow.Version {
	return workflow.GetVersion(ctx, changeRules, rulesGen1, rulesLatest)
}
