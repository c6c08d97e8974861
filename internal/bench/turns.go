package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/agenttask/agenttask/contract"
)

// How one turn is driven, the same for AgentTask and BareLoop: send the
// `input` signal, then query `messages` for the page after what was already
// there until the new output shows; the turn's time runs from before the
// signal to the query reply that shows the output.

// pollEvery is the pause between two queries of one turn (a query itself
// is a round trip through the server and the worker, ~1-3 ms here).
var pollEvery = time.Millisecond

// turnTimeout bounds one turn; a turn this slow means something is broken.
const turnTimeout = 30 * time.Second

// turnTiming is what the client saw of one turn.
type turnTiming struct {
	Total  time.Duration // signal sent .. output seen
	Signal time.Duration // the SignalWorkflow call alone
	Polls  int           // queries made
}

// message is the part of a `messages` entry the bench reads.
type message struct {
	Type string `json:"type"`
}

// agentText is an input of ~100 bytes of text, numbered so every turn differs.
func agentText(turn int) map[string]any {
	return map[string]any{"message": []any{map[string]any{"mimeType": "text/plain", "text": payload(turn)}}}
}

// payload is ~100 bytes of text for turn n.
func payload(n int) string {
	s := fmt.Sprintf("turn %05d ", n)
	return s + strings.Repeat("lorem ipsum ", 8)[:100-len(s)]
}

// agentTurn sends input number turn to the AgentTask id, whose messages list
// holds `before` entries, and waits for the output that answers it.
func agentTurn(ctx context.Context, c client.Client, id string, turn, before int) (turnTiming, error) {
	ctx, cancel := context.WithTimeout(ctx, turnTimeout)
	defer cancel()
	var tt turnTiming
	start := time.Now()
	if err := c.SignalWorkflow(ctx, id, "", contract.SignalInput, agentText(turn)); err != nil {
		return tt, fmt.Errorf("turn %d: signal: %w", turn, err)
	}
	tt.Signal = time.Since(start)
	page := contract.MessagesPage{After: before, Limit: 10}
	for {
		tt.Polls++
		var ms []message
		if err := query(ctx, c, id, contract.QueryMessages, page, &ms); err != nil {
			if ctx.Err() != nil {
				return tt, fmt.Errorf("turn %d: no output within %s: %w", turn, turnTimeout, err)
			}
		}
		for _, m := range ms {
			if m.Type == "output" {
				tt.Total = time.Since(start)
				return tt, nil
			}
		}
		time.Sleep(pollEvery)
	}
}

// bareTurn is agentTurn for BareLoop, whose list holds `before` outputs.
func bareTurn(ctx context.Context, c client.Client, id string, turn, before int) (turnTiming, error) {
	ctx, cancel := context.WithTimeout(ctx, turnTimeout)
	defer cancel()
	var tt turnTiming
	start := time.Now()
	if err := c.SignalWorkflow(ctx, id, "", bareSignal, agentText(turn)); err != nil {
		return tt, fmt.Errorf("bare turn %d: signal: %w", turn, err)
	}
	tt.Signal = time.Since(start)
	page := barePage{After: before, Limit: 10}
	for {
		tt.Polls++
		var ms []bareIO
		if err := query(ctx, c, id, bareQuery, page, &ms); err != nil {
			if ctx.Err() != nil {
				return tt, fmt.Errorf("bare turn %d: no output within %s: %w", turn, turnTimeout, err)
			}
		}
		if len(ms) > 0 {
			tt.Total = time.Since(start)
			return tt, nil
		}
		time.Sleep(pollEvery)
	}
}

// query runs one query. Errors are the caller's to retry: right after a
// continue-as-new the new run cannot answer until its first workflow task
// has completed.
func query(ctx context.Context, c client.Client, id, name string, arg, into any) error {
	v, err := c.QueryWorkflow(ctx, id, "", name, arg)
	if err != nil {
		return err
	}
	return v.Get(into)
}
