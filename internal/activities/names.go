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
var LaterRuntimeNames = []string{ListMCPToolsName, CallMCPToolName, AskName}

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
