// Command starter starts agent tasks and talks to them; run "starter help".
// It is a thin command line over the Go client (package starter): each
// command parses its flags, checks what it can before dialing Temporal, and
// prints the client's answer as JSON.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"go.temporal.io/sdk/client"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/starter"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	dial := func(o client.Options) (client.Client, error) { return client.DialContext(ctx, o) }
	code := mainWith(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv, dial)
	stop()
	os.Exit(code)
}

// mainWith runs one command line (without the program name) and returns the
// exit status: 0, 1 for a failure, 2 for a usage error. Tests give it their
// own streams, environment and dialer.
func mainWith(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string, dial func(client.Options) (client.Client, error)) int {
	x := &cli{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr, getenv: getenv, dial: dial}
	defer func() {
		if x.tc != nil {
			x.tc.Close()
		}
	}()

	out, err := x.dispatch(args)
	var ue *usageError
	switch {
	case errors.Is(err, errHelp) && len(args) == 0:
		fmt.Fprint(stderr, Usage) // no command at all: a usage error
		return 2
	case errors.Is(err, errHelp):
		fmt.Fprint(stdout, Usage) // asked for: success
		return 0
	case errors.As(err, &ue):
		writeError(stderr, ErrUsage, ue.msg)
		if ue.showUsage {
			fmt.Fprint(stderr, "\n"+Usage)
		}
		return 2
	case err != nil:
		typ, msg := ErrClient, err.Error()
		var se *contract.Error
		if errors.As(err, &se) {
			typ, msg = se.Type, se.Message
		}
		var be *starter.BudgetExceededError
		if errors.As(err, &be) { // its records, usage and budget too
			writeErrorDetails(stderr, typ, msg, be.Details)
			return 1
		}
		writeError(stderr, typ, msg)
		return 1
	}
	if _, ok := out.(noOutput); ok { // chat printed its own
		return 0
	}
	if err := writeJSON(stdout, out); err != nil {
		writeError(stderr, ErrClient, "writing the output: "+err.Error())
		return 1
	}
	return 0
}
