package workflows

import (
	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/broker"
)

// checkStream checks StartArgs stream: the text streamed must be the answer
// itself, so only agents whose answer is the model's text (plain or one JSON
// object) stream. Capabilities and the output pass make tool calls, and
// exposes and mounts wrap the reply in a JSON object.
func checkStream(args *StartArgs, rules rules) error {
	if !args.Stream {
		return nil
	}
	if !rules.stream {
		return contract.Invalid("stream needs a newer worker")
	}
	if rules.streamAll {
		return nil // every task streams (streams)
	}
	a := args.Agent
	if len(a.Capabilities) > 0 || len(a.Exposes) > 0 || a.Mount != nil || args.Output != nil {
		return contract.Invalid("stream: only an agent that answers in plain text or JSON streams; leave out capabilities, exposes, mount and output, or stream")
	}
	return nil
}

// streams says whether the task's model calls publish their events to
// the worker's broker: under rules.streamAll every task whose ID can name
// a subject does (a sub-task's ID, with its dots, does not); before, the
// tasks started with stream.
//
// Under rules.streamEvents a sub-task streams too: its ID is its parent's
// and tokens joined by '.', a subject under its run's.
func streams(args *StartArgs, rules rules, taskID string, subTask bool) bool {
	switch {
	case rules.streamEvents && subTask:
		return broker.CheckTaskID(taskID) == nil
	case rules.streamAll:
		return broker.CheckRunID(taskID) == nil
	}
	return args.Stream
}

// CheckStreamID refuses a task ID that cannot name a broker subject
// (runs.<task ID>); the starter calls it before starting a streamed task.
func CheckStreamID(taskID string) error {
	if err := broker.CheckRunID(taskID); err != nil {
		return contract.Invalid("stream: %v", err)
	}
	return nil
}
