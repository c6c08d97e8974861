package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"

	"github.com/agenttask/agenttask/internal/tasksapi"
)

// startAPI serves the Tasks API on AGENT_API_ADDR (default :8080). Unless
// DEVELOPER_KEYS or API_KEYS are set, it makes a developer key and a
// call+view key for this session and prints them.
func startAPI(ctx context.Context, c client.Client, runQueue, transcriptURL string, logger log.Logger) (<-chan error, error) {
	if os.Getenv(tasksapi.EnvDeveloperKeys) == "" && os.Getenv(tasksapi.EnvAPIKeys) == "" {
		dev, call := randomKey("dev"), randomKey("key")
		_ = os.Setenv(tasksapi.EnvDeveloperKeys, dev)
		_ = os.Setenv(tasksapi.EnvAPIKeys, call+"=call+view")
		fmt.Printf("Tasks API keys:    developer %s, call+view %s (set %s / %s to choose)\n", dev, call, tasksapi.EnvDeveloperKeys, tasksapi.EnvAPIKeys)
	}
	cfg, err := tasksapi.ConfigFromEnv(os.Getenv)
	if err != nil {
		return nil, err
	}
	cfg.RunQueue = runQueue // runs go to this stack's worker
	cfg.Log = logger        // the codec server's audit lines, with the stack's logs
	// Messages of runs Temporal removed: from this stack's transcripts.
	cfg.TranscriptURL = transcriptURL
	devCodec(&cfg) // the codec server open to this stack's Web UI
	ready := make(chan string, 1)
	cfg.Ready = func(addr string) { ready <- addr }
	done := make(chan error, 1)
	go func() { done <- tasksapi.Serve(ctx, c, cfg) }()
	select {
	case addr := <-ready:
		fmt.Printf("Tasks API:         http://%s (OpenAPI at /openapi.json)\n", displayAddr(addr))
		fmt.Printf("Chat page:         http://%s/ui/ (enter the call+view key)\n", displayAddr(addr))
	case err := <-done:
		return nil, fmt.Errorf("the Tasks API: %w", err)
	}
	return done, nil
}

func randomKey(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return prefix + "-" + hex.EncodeToString(b[:])
}

// displayAddr shows a wildcard listen address as localhost.
func displayAddr(addr string) string {
	if strings.HasPrefix(addr, "[::]:") || strings.HasPrefix(addr, "0.0.0.0:") {
		return "localhost:" + addr[strings.LastIndex(addr, ":")+1:]
	}
	return addr
}
