package main

import (
	"flag"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/workflows"
	"github.com/agenttask/agenttask/starter"
)

// start --agent JSON|FILE [--input TEXT | --input-json JSON|FILE] [--mode M]
// [--idle-timeout D] [--task-id ID], or start --args JSON|FILE [--task-id ID].
func startFlags(fs *flag.FlagSet, o *options) {
	fs.StringVar(&o.agent, "agent", "", "the agent: inline JSON, a file, or - for stdin")
	fs.StringVar(&o.input, "input", "", "the first input, as text")
	fs.StringVar(&o.inputJSON, "input-json", "", "the first input, a TaskIO: inline JSON, a file, or -")
	fs.StringVar(&o.mode, "mode", "", "conversation or single")
	fs.StringVar(&o.taskID, "task-id", "", "the task ID; generated when left out")
	fs.StringVar(&o.idleTimeout, "idle-timeout", "", "end a conversation idle this long, e.g. 30m")
	fs.StringVar(&o.args, "args", "", "the whole start argument: inline JSON, a file, or -")
	budgetFlags(fs, o) // budget.go
}

func start(x *cli, pos []string) (any, error) {
	if len(pos) > 0 {
		return nil, usagef("start: unexpected arguments %q (the first input goes in --input or --input-json)", pos)
	}
	var args workflows.StartArgs
	var err error
	if x.set["args"] {
		args, err = x.wholeStartArgs()
	} else {
		args, err = x.startArgsFromFlags()
	}
	if err != nil {
		return nil, err
	}
	// Refuse a bad argument before dialing: no server is needed to learn it.
	if _, err := workflows.CheckStart(&args); err != nil {
		return nil, err
	}
	if args.Carry != nil || args.CarryRef != nil {
		return nil, contract.Invalid("carry is written by the runtime when a task continues as new; leave it out")
	}
	if x.set["task-id"] {
		if err := starter.CheckTaskID(x.opt.taskID); err != nil {
			return nil, err
		}
	}
	c, err := x.client()
	if err != nil {
		return nil, err
	}
	id, err := c.Start(x.ctx, args.StartArgs, starter.StartOptions{TaskID: x.opt.taskID})
	if err != nil {
		return nil, err
	}
	return map[string]string{"task_id": id}, nil
}

// wholeStartArgs reads --args, which no other part of the argument may
// come beside.
func (x *cli) wholeStartArgs() (workflows.StartArgs, error) {
	for _, f := range []string{"agent", "input", "input-json", "mode", "idle-timeout"} {
		if x.set[f] {
			return workflows.StartArgs{}, usagef("start: --args holds the whole start argument; put %s in it instead of --%s", f, f)
		}
	}
	for _, f := range budgetFlagNames {
		if x.set[f] {
			return workflows.StartArgs{}, usagef("start: --args holds the whole start argument; put the budget in it, such as \"budget\": {\"units\": 5000}, instead of --%s", f)
		}
	}
	data, err := x.readJSON("--args", x.opt.args)
	if err != nil {
		return workflows.StartArgs{}, err
	}
	a, _, err := workflows.CheckStartJSON(data)
	if err != nil {
		return workflows.StartArgs{}, err
	}
	return *a, nil
}

// startArgsFromFlags builds the argument from --agent, --input or
// --input-json, --mode and --idle-timeout.
func (x *cli) startArgsFromFlags() (workflows.StartArgs, error) {
	var args workflows.StartArgs
	if !x.set["agent"] {
		return args, usagef("start: --agent is required (or --args with the whole start argument)")
	}
	if x.set["input"] && x.set["input-json"] {
		return args, usagef("start: give --input or --input-json, not both")
	}
	data, err := x.readJSON("--agent", x.opt.agent)
	if err != nil {
		return args, err
	}
	if err := decodeStrict(data, &args.Agent); err != nil {
		return args, contract.Invalid("--agent: not an agent object such as {\"name\": \"helper\", \"model\": \"openai/gpt-4o-mini\"}: %v", err)
	}
	switch {
	case x.set["input"]:
		in := textInput(x.opt.input)
		args.Input = &in
	case x.set["input-json"]:
		in, err := x.readTaskIO("--input-json", x.opt.inputJSON)
		if err != nil {
			return args, err
		}
		args.Input = &in
	}
	args.Mode = contract.Mode(x.opt.mode)
	args.IdleTimeout = x.opt.idleTimeout
	args.Budget, err = x.budget()
	return args, err
}
