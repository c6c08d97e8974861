// Command starter starts agent tasks and talks to them; run "starter help".
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/agenttask/agenttask/starter"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := starter.Main(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}
