// Command agentdev runs the agent-task runtime for local development.
//
//	agentdev [run] [flags]     run tasks against an embedded dev stack
//	agentdev server [flags]    run only the embedded Temporal server and UI
//	agentdev profile [NAME]    print a dynamic-config profile
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

const usage = `usage:
  agentdev [run] [flags]     run tasks against an embedded dev stack
  agentdev server [flags]    run only the embedded Temporal server and Web UI
  agentdev profile [NAME]    print a dynamic-config profile's settings (-json)

Run "agentdev server -h" for the server's flags.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// After the first signal, restore default handling so a second
		// Ctrl-C kills a shutdown that hangs.
		<-ctx.Done()
		stop()
	}()

	err := dispatch(ctx, os.Args[1:])
	stop()
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errUsage):
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "agentdev:", err)
		os.Exit(1)
	}
}

var errUsage = errors.New("usage")

func dispatch(ctx context.Context, args []string) error {
	if len(args) == 0 || len(args[0]) > 0 && args[0][0] == '-' {
		return runDev(ctx, args)
	}
	switch args[0] {
	case "run":
		return runDev(ctx, args[1:])
	case "server":
		return runServer(ctx, args[1:])
	case "profile":
		return printProfile(args[1:])
	case "help":
		fmt.Print(usage)
		return nil
	default:
		fmt.Fprintf(os.Stderr, "agentdev: unknown command %q\n", args[0])
		return errUsage
	}
}
