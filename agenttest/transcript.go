package agenttest

import (
	"context"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
	"github.com/agenttask/agenttask/internal/workerkit"
)

// testRunID stands in for the first run ID, which the SDK's test
// environment (v1.50) leaves empty in workflow.GetInfo (FirstRunID): the
// transcript store refuses a key without one, and every task of a test
// has one run.
const testRunID = "agenttest-run"

// transcriptFor is the store's adapter with keys completed.
type transcriptFor struct{ inner workerkit.TranscriptAdapter }

func fill(k activities.TranscriptKey) activities.TranscriptKey {
	if k.FirstRunID == "" {
		k.FirstRunID = testRunID
	}
	if p := k.Parent; p != nil && p.FirstRunID == "" {
		q := *p
		q.FirstRunID = testRunID
		k.Parent = &q
	}
	return k
}

func (t transcriptFor) WriteAt(ctx context.Context, k activities.TranscriptKey, pos int, m contract.Message) error {
	return t.inner.WriteAt(ctx, fill(k), pos, m)
}

func (t transcriptFor) PutPending(ctx context.Context, k activities.TranscriptKey, pos, turn int, m contract.Message) (contract.Message, error) {
	return t.inner.PutPending(ctx, fill(k), pos, turn, m)
}

func (t transcriptFor) GetPending(ctx context.Context, k activities.TranscriptKey, pos, turn int) (contract.Message, error) {
	return t.inner.GetPending(ctx, fill(k), pos, turn)
}

func (t transcriptFor) Window(ctx context.Context, k activities.TranscriptKey, end, budget int) (int, []contract.Message, error) {
	return t.inner.Window(ctx, fill(k), end, budget)
}

func (t transcriptFor) Read(ctx context.Context, k activities.TranscriptKey, from, to int) ([]contract.Message, error) {
	return t.inner.Read(ctx, fill(k), from, to)
}

func (t transcriptFor) WriteLink(ctx context.Context, k activities.TranscriptKey) error {
	return t.inner.WriteLink(ctx, fill(k))
}

func (t transcriptFor) PutOnce(ctx context.Context, k activities.TranscriptKey, name string, v, stored any) (bool, error) {
	return t.inner.PutOnce(ctx, fill(k), name, v, stored)
}

func (t transcriptFor) GetOnce(ctx context.Context, k activities.TranscriptKey, name string, v any) error {
	return t.inner.GetOnce(ctx, fill(k), name, v)
}

func (t transcriptFor) PutLatest(ctx context.Context, k activities.TranscriptKey, name string, v any) error {
	return t.inner.PutLatest(ctx, fill(k), name, v)
}

func (t transcriptFor) GetLatest(ctx context.Context, k activities.TranscriptKey, name string, v any) error {
	return t.inner.GetLatest(ctx, fill(k), name, v)
}
