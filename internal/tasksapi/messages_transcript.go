package tasksapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"go.temporal.io/api/serviceerror"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/retained"
)

// Messages after Temporal's retention (docs/tasks-api.md): once Temporal
// has removed a closed run's execution, GET /v1/runs/{id}/messages reads
// the run's transcript from the store the workers write (Config.Transcript,
// AGENT_TRANSCRIPT_URL and AGENT_CODEC_KEYS as the workers have them), as
// the messages query would answer, until the retention sweep removes the
// objects too; then the run is not found, as any unknown run. Only the
// store can answer then: the run's memo (which task started it) is gone
// with its execution, so any run ID whose transcript is stored is served.

// EnvTranscriptURL is the workers' transcript store, read by the API too.
const EnvTranscriptURL = "AGENT_TRANSCRIPT_URL"

// retainedMessages answers in from the transcript when Temporal no longer
// knows the run (ok false: it does, or no store is configured, or the store
// holds nothing of it; the caller's refusal stands).
func (s *server) retainedMessages(ctx context.Context, in *messagesIn) (*messagesOut, bool, error) {
	if s.cfg.Transcript == nil {
		return nil, false, nil
	}
	_, err := s.cfg.Store.C.DescribeWorkflowExecution(ctx, in.ID, "")
	var nf *serviceerror.NotFound
	if !errors.As(err, &nf) {
		return nil, false, nil // Temporal has it (or cannot say): its answer stands
	}
	msgs, err := retained.Messages(ctx, s.cfg.Transcript, in.ID, &contract.MessagesPage{After: in.After, Limit: in.Limit})
	if errors.Is(err, retained.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, true, problem(CodeUnavailable, "the run's messages are being read from the transcript store; retry in a moment", "", http.StatusServiceUnavailable)
		}
		return nil, true, problem(CodeInternal, fmt.Sprintf("reading run %s from the transcript store: %v", in.ID, err), "")
	}
	out := &messagesOut{}
	out.Body.Data = msgs
	return out, true, nil
}
