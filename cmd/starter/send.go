package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/starter"
)

// send TASK_ID TEXT|--json JSON|FILE [--signal] [--input-id ID].
func sendFlags(fs *flag.FlagSet, o *options) {
	fs.StringVar(&o.json, "json", "", "the input, a TaskIO: inline JSON, a file, or -")
	fs.BoolVar(&o.signal, "signal", false, "send the input signal instead of the send update")
	fs.StringVar(&o.inputID, "input-id", "", "the input's idempotency key: the update ID, or input_id in the signal")
}

func send(x *cli, pos []string) (any, error) {
	if len(pos) == 0 {
		return nil, usagef("send: TASK_ID is missing")
	}
	id := pos[0]
	in, err := x.sendInput(pos[1:])
	if err != nil {
		return nil, err
	}
	// Refuse a bad input ID before dialing: no server is needed to learn it.
	if x.set["input-id"] {
		if err := starter.CheckInputIDFor(in, x.opt.inputID); err != nil {
			return nil, err
		}
	}
	c, err := x.client()
	if err != nil {
		return nil, err
	}
	if x.opt.signal {
		if err := c.SignalWithID(x.ctx, id, x.opt.inputID, in); err != nil {
			return nil, err
		}
		return map[string]bool{"signaled": true}, nil
	}
	return c.SendWithID(x.ctx, id, x.opt.inputID, in)
}

// sendInput is the input to send: --json, or TEXT ("-": stdin).
func (x *cli) sendInput(text []string) (contract.TaskIO, error) {
	switch {
	case x.set["json"] && len(text) > 0:
		return contract.TaskIO{}, usagef("send: give TEXT or --json, not both")
	case x.set["json"]:
		return x.readTaskIO("--json", x.opt.json)
	case len(text) == 0:
		return contract.TaskIO{}, usagef("send: TEXT (or --json) is missing")
	case len(text) > 1:
		return contract.TaskIO{}, usagef("send: TEXT must be one argument; quote it")
	case text[0] == "-":
		b, err := io.ReadAll(x.stdin)
		if err != nil {
			return contract.TaskIO{}, fmt.Errorf("send: reading stdin: %w", err)
		}
		return textInput(string(b)), nil
	}
	return textInput(text[0]), nil
}
