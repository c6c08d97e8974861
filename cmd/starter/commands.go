package main

import (
	"context"
	"encoding/json"
	"flag"
	"io"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/agenttask/agenttask/starter"
)

// command is one command of the starter: the flags it takes beyond the
// global ones and what it does with its positional arguments once the
// command line is parsed.
type command struct {
	name  string
	flags func(fs *flag.FlagSet, o *options) // declares its flags into o; nil: none
	run   func(x *cli, pos []string) (any, error)
}

// commands are the starter's commands, in the order the help lists them.
var commands = []command{
	{"start", startFlags, start},
	{"send", sendFlags, send},
	{"status", nil, onTask(func(x *cli, c *starter.Client, id string) (any, error) { return c.Status(x.ctx, id) })},
	{"messages", messagesFlags, messages},
	{"close", nil, signalTask(func(x *cli, c *starter.Client, id string) error { return c.Close(x.ctx, id) })},
	{"cancel-turn", nil, signalTask(func(x *cli, c *starter.Client, id string) error { return c.CancelTurn(x.ctx, id) })},
	{"approvals", nil, onTask(func(x *cli, c *starter.Client, id string) (any, error) { return c.Approvals(x.ctx, id) })},
	{"approve", decideFlags, decide(true)},
	{"deny", decideFlags, decide(false)},
	{"raise-budget", raiseFlags, raiseBudget}, // budget.go
	{"result", nil, onTask(func(x *cli, c *starter.Client, id string) (any, error) { return c.Result(x.ctx, id) })},
	{"rescue", againFlags, rescue},
	{"resume", againFlags, resume},
	{"upload", uploadFlags, upload},
	{"chat", chatFlags, chat},   // chat.go: an interactive conversation
	{"deploy", nil, deploy},     // deploy.go: the workers' Worker Deployment
	{"delete", nil, deleteTask}, // delete.go
}

func findCommand(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// options holds the commands' flags. One run parses one command's, so
// commands that take a flag of the same name share its field.
type options struct {
	// start (taskID and input also rescue and resume)
	agent, input, inputJSON, mode, taskID, idleTimeout, args string
	// send
	json, inputID string
	signal        bool
	// messages
	after, limit int
	all          bool
	// approve, deny
	reason, by string
	result     *string // approve --result: a client capability's call answered
	// upload
	mount, mountURL, root, as, mime string
	// rescue, resume
	vars map[string]json.RawMessage
	// start, rescue, resume: the budget (budget.go)
	budgetUnits, budgetInputTokens, budgetOutputTokens int64
	onExhausted                                        string
	// raise-budget
	raiseUnits, raiseInputTokens, raiseOutputTokens int64
}

// cli is one run of the command.
type cli struct {
	ctx    context.Context
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer // progress bars and final lines of file moves (progress.go)
	getenv func(string) string
	dial   func(client.Options) (client.Client, error)

	address, namespace, taskQueue string // the global flags

	name string          // the command being run
	opt  options         // its flags
	set  map[string]bool // the flags given on the command line

	tc client.Client
	dc converter.DataConverter
}

// onTask is a command that takes only TASK_ID and prints what call answers.
func onTask(call func(x *cli, c *starter.Client, id string) (any, error)) func(x *cli, pos []string) (any, error) {
	return func(x *cli, pos []string) (any, error) {
		id, err := oneTaskID(x.name, pos)
		if err != nil {
			return nil, err
		}
		c, err := x.client()
		if err != nil {
			return nil, err
		}
		return call(x, c, id)
	}
}

// signalTask is a command that takes only TASK_ID, sends a signal and
// prints {"signaled": true}.
func signalTask(send func(x *cli, c *starter.Client, id string) error) func(x *cli, pos []string) (any, error) {
	return onTask(func(x *cli, c *starter.Client, id string) (any, error) {
		if err := send(x, c, id); err != nil {
			return nil, err
		}
		return map[string]bool{"signaled": true}, nil
	})
}
