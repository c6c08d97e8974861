package activities

import (
	"context"
	"errors"
	"time"

	"github.com/agenttask/agenttask/internal/llm"
)

// Metrics records what the activities measure (package telemetry exports
// it); Activities.Metrics nil records nothing.
type Metrics interface {
	// ModelCall records one model request: its latency, the tokens the
	// provider reported, and retryType when it failed and is tried again
	// (a transient fault, or a context-length refusal that is sent smaller).
	ModelCall(model string, took time.Duration, in, out int64, retryType string)
	// ShapingAttempt records one shaping attempt by outcome: object (a JSON
	// object, checked against the schema by the workflow), not_json, error.
	ShapingAttempt(outcome string)
}

// complete is a.Models.Complete, measured.
func (a *Activities) complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	g := guardOf(ctx) // a task's budget (budget.go)
	req, err := g.reserve(ctx, req)
	if err != nil {
		return llm.Response{}, err
	}
	a.measurePrefix(ctx, req) // what it shares with the task's last request (prefix.go)
	start := time.Now()
	spanCtx, span := startModelSpan(ctx, req) // genai.go
	resp, err := a.Models.Complete(spanCtx, req)
	endModelSpan(span, resp, err)
	if err == nil {
		g.charge(ctx, req.Model, resp.Usage)
	}
	if a.Metrics != nil && ctx.Err() == nil {
		var in, out int64
		if err == nil {
			in, out = int64(resp.Usage.InputTokens), int64(resp.Usage.OutputTokens)
		}
		a.Metrics.ModelCall(req.Model, time.Since(start), in, out, retryType(err))
	}
	return resp, err
}

// retryType classifies a failed model request that is tried again; "" for
// success and for a failure no retry fixes.
func retryType(err error) string {
	if err == nil {
		return ""
	}
	var le *llm.Error
	if !errors.As(err, &le) {
		return "error"
	}
	switch {
	case le.ContextLength:
		return "context_length"
	case !le.Retryable:
		return ""
	case le.StatusCode == 429:
		return "rate_limited"
	case le.StatusCode == 401 || le.StatusCode == 403:
		return "auth"
	case le.StatusCode == 408:
		return "timeout"
	case le.StatusCode >= 500:
		return "server_error"
	case le.StatusCode == 0:
		return "unreachable"
	}
	return "error"
}

// countShaping records a shaping attempt's outcome.
func (a *Activities) countShaping(ctx context.Context, res *ShapeResult, err error) {
	if a.Metrics == nil || ctx.Err() != nil {
		return
	}
	switch {
	case err != nil:
		a.Metrics.ShapingAttempt("error")
	case res != nil && len(res.Object) > 0:
		a.Metrics.ShapingAttempt("object")
	default:
		a.Metrics.ShapingAttempt("not_json")
	}
}
