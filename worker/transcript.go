package worker

import (
	"context"
	"fmt"

	"github.com/agenttask/agenttask/activities"
	"github.com/agenttask/agenttask/schema"
	"github.com/agenttask/agenttask/transcript"
)

// TranscriptAdapter serves the activities and the workflow's `messages`
// query from the transcript store.
type TranscriptAdapter struct{ Store *transcript.Store }

var (
	_ activities.Transcript = TranscriptAdapter{}
)

func key(k activities.TranscriptKey) transcript.Key {
	return transcript.Key{TaskID: k.TaskID, FirstRunID: k.FirstRunID}
}

// pendingName names an output its turn stored before the workflow stamped
// it; the turn number keeps a canceled turn's late write apart.
func pendingName(pos, turn int) string { return fmt.Sprintf("pending-%010d-turn-%d", pos, turn) }

func (a TranscriptAdapter) WriteAt(ctx context.Context, k activities.TranscriptKey, pos int, m schema.Message) error {
	return a.Store.Write(ctx, key(k), pos, []schema.Message{m})
}

func (a TranscriptAdapter) PutPending(ctx context.Context, k activities.TranscriptKey, pos, turn int, m schema.Message) error {
	return a.Store.PutJSON(ctx, key(k), pendingName(pos, turn), m)
}

func (a TranscriptAdapter) GetPending(ctx context.Context, k activities.TranscriptKey, pos, turn int) (schema.Message, error) {
	var m schema.Message
	err := a.Store.GetJSON(ctx, key(k), pendingName(pos, turn), &m)
	return m, err
}

func (a TranscriptAdapter) Window(ctx context.Context, k activities.TranscriptKey, end, budget int) (int, []schema.Message, error) {
	return a.Store.Window(ctx, key(k), end, budget)
}

func (a TranscriptAdapter) Read(ctx context.Context, k activities.TranscriptKey, from, to int) ([]schema.Message, error) {
	return a.Store.Read(ctx, key(k), from, to)
}
