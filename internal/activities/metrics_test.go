package activities

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/llm"
)

type recordedCall struct {
	model   string
	in, out int64
	retry   string
}

type recorder struct {
	calls   []recordedCall
	shaping []string
}

func (r *recorder) ModelCall(model string, took time.Duration, in, out int64, retryType string) {
	r.calls = append(r.calls, recordedCall{model, in, out, retryType})
}
func (r *recorder) ShapingAttempt(outcome string) { r.shaping = append(r.shaping, outcome) }

type fakeModel struct {
	resp llm.Response
	err  error
}

func (f fakeModel) Complete(context.Context, llm.Request) (llm.Response, error) { return f.resp, f.err }

func TestModelCallMetrics(t *testing.T) {
	ctx := context.Background()
	req := llm.Request{Model: "p/m"}
	r := &recorder{}
	a := &Activities{Metrics: r, Models: fakeModel{resp: llm.Response{Usage: contract.Usage{InputTokens: 7, OutputTokens: 2}}}}
	_, err := a.complete(ctx, req)
	require.NoError(t, err)
	for _, e := range []error{
		&llm.Error{Retryable: true, StatusCode: 429},
		&llm.Error{Retryable: true, StatusCode: 503},
		&llm.Error{Retryable: true, ContextLength: true, StatusCode: 400},
		&llm.Error{Retryable: false, StatusCode: 400},
		errors.New("dial tcp: refused"),
	} {
		a.Models = fakeModel{err: e}
		_, err = a.complete(ctx, req)
		require.Error(t, err)
	}
	require.Equal(t, []recordedCall{
		{"p/m", 7, 2, ""}, {"p/m", 0, 0, "rate_limited"}, {"p/m", 0, 0, "server_error"},
		{"p/m", 0, 0, "context_length"}, {"p/m", 0, 0, ""}, {"p/m", 0, 0, "error"},
	}, r.calls)

	// A canceled call is not measured; nil Metrics records nothing.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, _ = a.complete(cctx, req)
	require.Len(t, r.calls, 6)
	_, err = (&Activities{Models: fakeModel{}}).complete(ctx, req)
	require.NoError(t, err)

	a.countShaping(ctx, &ShapeResult{Object: []byte(`{}`)}, nil)
	a.countShaping(ctx, &ShapeResult{}, nil)
	a.countShaping(ctx, nil, errors.New("x"))
	require.Equal(t, []string{"object", "not_json", "error"}, r.shaping)
}
