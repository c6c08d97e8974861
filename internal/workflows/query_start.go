package workflows

import (
	"encoding/json"

	"go.temporal.io/sdk/workflow"
)

// QueryStartArgs returns StartArgs: what stays the same in every run of a
// task (agent, mode, output, variables, secrets, timeouts, stream), without
// what differs from run to run (input, history, collected, continue, carry,
// carryRef). A secret's value reads "[secret]", as in a later run's start
// argument. The starter's rescue and resume read it when the latest run
// started from a reference (carryRef), whose history holds none of it.
const QueryStartArgs = "start-args"

// registerStartQuery installs the start-args query. A query writes no
// history, so it needs no version gate. SetQueryHandler fails only for a
// handler of the wrong shape, which this one is not.
// It answers from args, this run's start argument, read back from the
// stash when the run started from a reference (o).
func registerStartQuery(ctx workflow.Context, o *opening, args *StartArgs) {
	query := func() (StartArgs, error) {
		if o.restoring() {
			return StartArgs{}, errRestoring
		}
		return sameInEveryRun(*args), nil
	}
	if err := workflow.SetQueryHandler(ctx, QueryStartArgs, query); err != nil {
		panic(err)
	}
}

// sameInEveryRun is a start argument without what differs from run to
// run, a secret's value read "[secret]".
func sameInEveryRun(args StartArgs) StartArgs {
	a := args
	a.Input, a.History, a.Collected, a.Continue, a.Carry, a.CarryRef = nil, nil, nil, nil, nil, nil
	a.Variables = make(map[string]json.RawMessage, len(args.Variables))
	//workflowcheck:ignore a copy into a map: the order does not show
	for n, v := range args.Variables {
		a.Variables[n] = v
	}
	for _, s := range args.Secrets {
		if _, ok := a.Variables[s]; ok {
			a.Variables[s] = json.RawMessage(`"[secret]"`)
		}
	}
	return a
}
