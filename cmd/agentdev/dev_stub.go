package main

import (
	"context"
	"errors"
)

// runDev is a placeholder until dev.go lands; delete this file then.
func runDev(ctx context.Context, args []string) error {
	return errors.New("agentdev run: not built yet")
}
