package activities

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/llm"
)

// A provider may hold a smaller context than the agent says, or count a
// request larger than this runtime does: it refuses the request as over the
// model's context. Sending the same request again cannot help, so the turn
// sends less: each refusal halves the limit, at most maxShrinks times a
// turn, and the worker remembers what the provider took and refused
// (contextmemory.go) so later turns start near its real limit.

// contextFit fits one turn's model calls to the model's context. It lasts
// as long as the turn: a call asked again for a refused answer starts at
// the limit the last call found, and refusals count over the whole turn.
type contextFit struct {
	spec    contract.AgentSpec
	key     string // the model's entry in the worker's context memory
	limit   int    // the tokens the next call may send
	refused []int  // sizes the provider refused as over the model's context
	refusal string // the provider's last word on it
}

func (a *Activities) newContextFit(spec contract.AgentSpec) *contextFit {
	key := contextKey(spec)
	return &contextFit{spec: spec, key: key, limit: a.context.limit(key, contextLimit(spec))}
}

// complete makes one model call, cut to fit the context (context.go) and
// sent smaller each time the provider refuses it as too long. full keeps
// everything, so a smaller limit cuts it afresh; entries and keep are as
// fitRequest takes them. It returns the answer and how the request sent
// was fitted.
func (f *contextFit) complete(ctx context.Context, a *Activities, full llm.Request, entries []int, keep int, logger log.Logger) (llm.Response, fitted, error) {
	for {
		req, fit := fitRequest(full, entries, f.limit, keep)
		if fit.Tokens < fit.Full {
			logger.Info("request cut to fit the model's context", "tokens", fit.Tokens, "built", fit.Full,
				"limit", f.limit, "files_cut", fit.Cut, "entries_left_out", fit.Dropped)
		}
		if n := len(f.refused); n > 0 && fit.Tokens >= f.refused[n-1] {
			return llm.Response{}, fit, contextRefused(f.spec, f.refused, "the request cannot get smaller", f.refusal)
		}
		resp, err := a.complete(ctx, req) // measured (metrics.go)
		var le *llm.Error
		if err != nil && ctx.Err() == nil && errors.As(err, &le) && le.ContextLength {
			f.refused, f.refusal = append(f.refused, fit.Tokens), le.Message
			a.context.refusedAt(f.key, fit.Tokens)
			if len(f.refused) > maxShrinks {
				return llm.Response{}, fit, contextRefused(f.spec, f.refused, fmt.Sprintf("shrunk %d times", maxShrinks), f.refusal)
			}
			f.limit = fit.Tokens / 2
			logger.Warn("the provider refused the request as over the model's context; sending less",
				"tokens", fit.Tokens, "limit", f.limit, "shrink", len(f.refused), "error", le.Message)
			continue
		}
		if err != nil {
			return llm.Response{}, fit, modelError(ctx, err)
		}
		a.context.takenAt(f.key, fit.Tokens)
		return resp, fit, nil
	}
}

// contextRefused is the turn's failure when the provider refused every
// size tried as over the model's context.
func contextRefused(spec contract.AgentSpec, refused []int, why, refusal string) error {
	sizes := make([]string, len(refused))
	for i, n := range refused {
		sizes[i] = fmt.Sprint(n)
	}
	ctx := spec.ContextTokens
	if ctx == 0 {
		ctx = contract.DefaultContextTokens
	}
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(
		"the provider refused the request as longer than the model's context at every size tried (about %s tokens, by this runtime's count; %s; the agent's contextTokens is %d): %s",
		strings.Join(sizes, ", "), why, ctx, refusal), contract.ErrModel, nil)
}
