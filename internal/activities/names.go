package activities

// RuntimeNames are the activity types the runtime registers on its own task
// queue. They trust the keys they are given (a transcript, a stash, a file
// space), so no agent may call them as a capability (rulesBudgets).
var RuntimeNames = []string{
	ModelTurnName, WriteEntriesName, CheckInputName, CopyFilesName, DescribeWorkerName,
	ShapeName, StashPutName, StashGetName, StoreValueName,
}

// LaterRuntimeNames are the runtime's activity types added since: refused
// from rulesMCP on (a task on older rules accepted these names and still
// must on replay).
var LaterRuntimeNames = []string{ListMCPToolsName, CallMCPToolName, AskName,
	PurgeTaskObjectsName, FindSubTasksName, TerminateTaskName, DeleteExecutionsName, SweepPageName, PublishEventsName}

// A2ARuntimeNames are the remote agents' activity types: refused as a
// capability's activity from rulesA2AAgents on, so a task started before
// decides on replay as it did.
var A2ARuntimeNames = []string{SendA2AMessageName, GetA2ATaskName, CancelA2ATaskName}

// The cleanup's activity types (package cleanup registers them on the
// runtime's queue): they remove any task they are given, so no agent may
// call them. Refused from rulesMCP on like the names above: rules 11 was
// the latest when they were added, so only a task started on rules 11
// before then with an activity capability of one of these very names
// would decide differently on replay. Every one of them is named under
// "agenttask." so that no team's own activity type can be one of them.
const (
	PurgeTaskObjectsName = "agenttask.PurgeTaskObjects"
	FindSubTasksName     = "agenttask.FindSubTasks"
	TerminateTaskName    = "agenttask.TerminateTask"
	DeleteExecutionsName = "agenttask.DeleteExecutions"
	SweepPageName        = "agenttask.SweepPage" // the retention sweep's (cleanup/sweep.go)
)

// AskName is the activity agents.Ask runs (the plugin registers it beside
// the runtime's): it sends the ask update to any task ID it is given, so
// no agent may call it either.
const AskName = "agenttask.Ask"

// IsRuntimeName reports whether name is one of RuntimeNames, or with later
// set, of LaterRuntimeNames too.
func IsRuntimeName(name string, later bool) bool {
	for _, n := range RuntimeNames {
		if n == name {
			return true
		}
	}
	for _, n := range LaterRuntimeNames {
		if later && n == name {
			return true
		}
	}
	return false
}
