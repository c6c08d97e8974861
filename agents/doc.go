// Package agents calls agent tasks from a team's own workflow code: Run
// starts an AgentTask as a child workflow and returns its result (decoded
// into the caller's Go type with Result.Decode), Start begins a
// conversation child and Ask sends it a follow-up and waits for the
// answer. Refusals and failures come back as *RefusedError and *TaskError.
//
// The workflow that calls them runs on a worker with the runtime's plugin
// (package plugin), which registers AgentTask, its activities and the
// activity Ask uses (AskActivityName). In unit tests, package agenttest
// registers them on the SDK's test environment with a fake model.
//
// Everything here is workflow code: deterministic, replay-safe. Each Run or
// Start records one SideEffect marker (the start check's outcome and the
// child's ID), so a newer release whose rules refuse more never changes
// what a recorded run did.
package agents
