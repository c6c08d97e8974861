package workerkit

import (
	"context"
	"fmt"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
	"github.com/agenttask/agenttask/internal/transcript"
)

// TranscriptAdapter serves the activities and the workflow's `messages`
// query from the transcript store.
type TranscriptAdapter struct{ Store *transcript.Store }

var (
	_ activities.Transcript = TranscriptAdapter{}
)

func key(k activities.TranscriptKey) transcript.Key {
	out := transcript.Key{TaskID: k.TaskID, FirstRunID: k.FirstRunID, From: k.From}
	if p := k.Parent; p != nil {
		out.Parent = &transcript.Link{TaskID: p.TaskID, FirstRunID: p.FirstRunID, From: p.From}
	}
	return out
}

// pendingName names an output its turn stored before the workflow stamped
// it; the turn number keeps a canceled turn's late write apart.
func pendingName(pos, turn int) string { return fmt.Sprintf("pending-%010d-turn-%d", pos, turn) }

func (a TranscriptAdapter) WriteAt(ctx context.Context, k activities.TranscriptKey, pos int, m contract.Message) error {
	return a.Store.Write(ctx, key(k), pos, []contract.Message{m})
}

// PutPending stores a turn's output once: a retried attempt whose first
// try stored its output gets that one back (and answers with it).
func (a TranscriptAdapter) PutPending(ctx context.Context, k activities.TranscriptKey, pos, turn int, m contract.Message) (contract.Message, error) {
	var stored contract.Message
	adopted, err := a.Store.PutOnce(ctx, key(k), pendingName(pos, turn), m, &stored)
	if err != nil || !adopted {
		return m, err
	}
	return stored, nil
}

// WriteLink records the transcript's parent for tasks that continue this one.
func (a TranscriptAdapter) WriteLink(ctx context.Context, k activities.TranscriptKey) error {
	return a.Store.WriteLink(ctx, key(k))
}

// PutOnce and GetOnce keep values written once per transcript (the files a
// continuation carried over).
func (a TranscriptAdapter) PutOnce(ctx context.Context, k activities.TranscriptKey, name string, v, stored any) (bool, error) {
	return a.Store.PutOnce(ctx, key(k), name, v, stored)
}

func (a TranscriptAdapter) GetOnce(ctx context.Context, k activities.TranscriptKey, name string, v any) error {
	return a.Store.GetOnce(ctx, key(k), name, v)
}

// PutLatest and GetLatest keep a value that is replaced as it changes
// (what a call's attempts spent: activities/spend_ledger.go).
func (a TranscriptAdapter) PutLatest(ctx context.Context, k activities.TranscriptKey, name string, v any) error {
	return a.Store.PutJSON(ctx, key(k), name, v)
}

func (a TranscriptAdapter) GetLatest(ctx context.Context, k activities.TranscriptKey, name string, v any) error {
	return a.Store.GetJSON(ctx, key(k), name, v)
}

func (a TranscriptAdapter) GetPending(ctx context.Context, k activities.TranscriptKey, pos, turn int) (contract.Message, error) {
	var m contract.Message
	err := a.Store.GetOnce(ctx, key(k), pendingName(pos, turn), &m)
	return m, err
}

func (a TranscriptAdapter) Window(ctx context.Context, k activities.TranscriptKey, end, budget int) (int, []contract.Message, error) {
	return a.Store.Window(ctx, key(k), end, budget)
}

func (a TranscriptAdapter) Read(ctx context.Context, k activities.TranscriptKey, from, to int) ([]contract.Message, error) {
	return a.Store.Read(ctx, key(k), from, to)
}
