package activities

// RuntimeNames are the activity types the runtime registers on its own task
// queue. They trust the keys they are given (a transcript, a stash, a file
// space), so no agent may call them as a capability (rulesBudgets).
var RuntimeNames = []string{
	ModelTurnName, WriteEntriesName, CheckInputName, CopyFilesName, DescribeWorkerName,
	ShapeName, StashPutName, StashGetName, StoreValueName, ListMCPToolsName, CallMCPToolName,
	AskName,
}

// AskName is the activity agents.Ask runs (the plugin registers it beside
// the runtime's): it sends the ask update to any task ID it is given, so
// no agent may call it either.
const AskName = "agenttask.Ask"

// IsRuntimeName reports whether name is one of RuntimeNames.
func IsRuntimeName(name string) bool {
	for _, n := range RuntimeNames {
		if n == name {
			return true
		}
	}
	return false
}
