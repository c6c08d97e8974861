package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"strings"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/starter"
)

// rescue OLD_ID [--input TEXT] / resume OLD_ID TEXT, [--task-id NEW] [--var NAME=JSON]...
func againFlags(fs *flag.FlagSet, o *options) {
	fs.StringVar(&o.taskID, "task-id", "", "the new task's ID; default a generated one")
	fs.StringVar(&o.input, "input", "", "rescue: a text input replacing the original one")
	o.vars = map[string]json.RawMessage{}
	fs.Func("var", "NAME=JSON: a variable replacing the earlier task's (repeatable); secrets of a task whose first run's history is gone", func(v string) error {
		name, value, ok := strings.Cut(v, "=")
		if !ok || name == "" || !json.Valid([]byte(value)) {
			return fmt.Errorf("--var takes NAME=JSON, such as api_key=\"abc\" (got %q)", v)
		}
		o.vars[name] = json.RawMessage(value)
		return nil
	})
	budgetFlags(fs, o) // budget.go: a new budget instead of what is left of the earlier task's
}

func rescue(x *cli, pos []string) (any, error) {
	if len(pos) != 1 {
		return nil, usagef("rescue takes TASK_ID")
	}
	o, err := x.againOptions() // refused before dialing
	if err != nil {
		return nil, err
	}
	c, err := x.client()
	if err != nil {
		return nil, err
	}
	var in *contract.TaskIO
	if x.opt.input != "" {
		in = &contract.TaskIO{Message: []contract.ContentPart{contract.TextPart(x.opt.input)}}
	}
	id, err := c.Rescue(x.ctx, pos[0], in, o)
	if err != nil {
		return nil, err
	}
	return map[string]string{"task_id": id}, nil
}

func resume(x *cli, pos []string) (any, error) {
	if len(pos) != 2 {
		return nil, usagef("resume takes TASK_ID TEXT")
	}
	o, err := x.againOptions() // refused before dialing
	if err != nil {
		return nil, err
	}
	c, err := x.client()
	if err != nil {
		return nil, err
	}
	id, err := c.Resume(x.ctx, pos[0], contract.TaskIO{Message: []contract.ContentPart{contract.TextPart(pos[1])}}, o)
	if err != nil {
		return nil, err
	}
	return map[string]string{"task_id": id}, nil
}

func (x *cli) againOptions() (starter.StartOptions, error) {
	b, err := x.budget()
	return starter.StartOptions{TaskID: x.opt.taskID, Variables: x.opt.vars, Budget: b}, err
}
