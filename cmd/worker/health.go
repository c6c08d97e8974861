package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/agenttask/agenttask/internal/connect"
	"github.com/agenttask/agenttask/internal/workflows"
)

// EnvHealthAddr is where the worker serves GET /healthz: 200 while its
// Temporal frontend answers a health check, 503 otherwise, with a line
// "streaming: on" or "streaming: off (why)" when it has a broker. Empty
// (the default): not served.
const EnvHealthAddr = "AGENT_HEALTH_ADDR"

// serveHealth serves /healthz on addr until ctx ends.
func serveHealth(ctx context.Context, addr string, c client.Client, features ...connect.Feature) error {
	if addr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("health: listening on %s (%s): %w", addr, EnvHealthAddr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", connect.HealthHandler(c, features...))
	connect.ServeUntilDone(ctx, ln, mux)
	return nil
}

// healthcheck is `worker healthcheck URL`: exit 0 when URL answers 200.
// Container images without a shell or curl use it as their health check
// (docker-compose.yml probes the worker's and the API's).
func healthcheck(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: worker healthcheck URL")
		return 2
	}
	hc := &http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Get(args[0])
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			err = errors.New(resp.Status)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "healthcheck:", err)
		return 1
	}
	return 0
}

// newerRulesFeature is /healthz's "rules" line: off while, in the last ten
// minutes, this worker met a task of newer rules than it knows (a rolling
// deploy or a rollback left it beside a newer build, or alone): the task
// waits, its workflow task retried, until a newer worker takes it.
func newerRulesFeature() connect.Feature {
	return connect.Feature{Name: "rules", Check: func() error {
		n, at := workflows.LastNewerRules()
		if n == nil || time.Since(at) > 10*time.Minute {
			return nil
		}
		return fmt.Errorf("%s ago: %w", time.Since(at).Round(time.Second), *n)
	}}
}
