package main

import (
	"flag"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/starter"
)

// approve|deny TASK_ID APPROVAL_ID [--reason TEXT] [--by NAME]
// [--result TEXT] (approve: a client capability's call, answered).
func decideFlags(fs *flag.FlagSet, o *options) {
	fs.StringVar(&o.reason, "reason", "", "why (shown to the model when denied)")
	fs.StringVar(&o.by, "by", "", "who decided, such as a user ID")
	fs.Func("result", "approve: the result of a client capability's call, which your front end ran (the model reads it)", func(v string) error {
		o.result = &v
		return nil
	})
}

func decide(approve bool) func(x *cli, pos []string) (any, error) {
	return func(x *cli, pos []string) (any, error) {
		switch len(pos) {
		case 0:
			return nil, usagef("%s: TASK_ID is missing", x.name)
		case 1:
			return nil, usagef("%s: APPROVAL_ID is missing (the approvals command lists them)", x.name)
		case 2:
		default:
			return nil, usagef("%s: unexpected arguments after the approval ID: %q (quote a --reason of several words)", x.name, pos[2:])
		}
		if x.opt.result != nil && !approve {
			return nil, usagef("%s: --result answers a client capability's call; deny refuses it without one", x.name)
		}
		d := contract.DecideArgs{ID: pos[1], Approve: &approve, Reason: x.opt.reason, By: x.opt.by, Result: x.opt.result}
		// Refuse a bad argument before dialing: no server is needed to learn it.
		if err := starter.CheckDecide(d); err != nil {
			return nil, err
		}
		c, err := x.client()
		if err != nil {
			return nil, err
		}
		return c.Decide(x.ctx, pos[0], d)
	}
}
