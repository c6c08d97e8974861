package starter_test

import (
	"fmt"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/starter"
)

// The workers' AGENT_MOUNTS, read as the client checks starts against it
// (Client.CheckMounts).
func ExampleParseMounts() {
	mounts, err := starter.ParseMounts(`{"files": "file:///var/lib/agenttask/files"}`)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(mounts["files"])
	// Output: file:///var/lib/agenttask/files
}

// A task ID of your own (StartOptions.TaskID) is checked before anything
// starts; a refusal is a *contract.Error with the type and what to change.
func ExampleCheckTaskID() {
	fmt.Println(starter.CheckTaskID("ticket-4711"))
	err := starter.CheckTaskID("ticket 4711")
	fmt.Println(contract.TypeOf(err))
	fmt.Println(contract.MessageOf(err))
	// Output:
	// <nil>
	// INVALID_INPUT
	// task ID: "ticket 4711" holds spaces or control characters; use letters, digits and punctuation such as - _ . :
}

// The line the Web UI shows for a task started with these arguments.
func ExampleSummary() {
	args := contract.StartArgs{
		Agent: contract.AgentSpec{Name: "triage", Model: "openai/gpt-4o-mini"},
		Mode:  contract.ModeSingle,
	}
	fmt.Println(starter.Summary(args))
	// Output: agent triage · openai/gpt-4o-mini · single
}
