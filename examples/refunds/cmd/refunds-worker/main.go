// Command refunds-worker runs the refunds sample's activity (IssueRefund)
// on task queue "payments": the caller's own worker, beside the runtime's.
// It reads TEMPORAL_ADDRESS (default localhost:7233), TEMPORAL_NAMESPACE
// (default "default") and REFUNDS_TASK_QUEUE (default "payments").
package main

import (
	"fmt"
	"log"
	"os"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/agenttask/agenttask/examples/refunds"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "refunds-worker:", err)
		os.Exit(1)
	}
}

func getenv(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func run() error {
	addr := getenv("TEMPORAL_ADDRESS", "localhost:7233")
	ns := getenv("TEMPORAL_NAMESPACE", "default")
	queue := getenv("REFUNDS_TASK_QUEUE", refunds.TaskQueue)
	c, err := client.Dial(client.Options{HostPort: addr, Namespace: ns})
	if err != nil {
		return fmt.Errorf("connecting to Temporal at %s: %w", addr, err)
	}
	defer c.Close()
	w := worker.New(c, queue, worker.Options{})
	refunds.Register(w)
	log.Printf("refunds-worker: %s on task queue %q (Temporal %s, namespace %s); Ctrl-C stops it", refunds.ActivityName, queue, addr, ns)
	return w.Run(worker.InterruptCh())
}
