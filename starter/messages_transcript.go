package starter

import (
	"context"
	"errors"
	"fmt"
	"io"

	"go.temporal.io/api/serviceerror"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/codec"
	"github.com/agenttask/agenttask/internal/retained"
	"github.com/agenttask/agenttask/internal/transcript"
)

// Messages after Temporal's retention: once Temporal has removed a closed
// task's execution, Messages (and AllMessages) read the task's transcript
// from the workers' store, as the messages query would answer, until the
// retention sweep removes the objects too (docs/design.md, Retention);
// then the task is not found (TASK_NOT_FOUND), as any unknown task.

// ReadTranscripts makes Messages fall back to the transcript store at
// bucketURL (the workers' AGENT_TRANSCRIPT_URL) for tasks Temporal no
// longer has. getenv gives the codec keys (AGENT_CODEC_KEYS) when the
// workers encrypt the store; nil reads none. The store is only read. The
// returned Closer closes it.
func (c *Client) ReadTranscripts(ctx context.Context, bucketURL string, getenv func(string) string) (io.Closer, error) {
	var cd *codec.Codec
	if getenv != nil {
		var err error
		if cd, err = codec.FromGetenv(getenv); err != nil {
			return nil, err
		}
	}
	s, err := transcript.OpenWith(ctx, bucketURL, cd.WrapBucket)
	if err != nil {
		return nil, fmt.Errorf("the transcript store %s: %w", bucketURL, err)
	}
	c.transcripts = s
	return s, nil
}

// retainedMessages answers from the transcript when the query found no
// task (ok false: it did, no store is configured, or the store holds
// nothing of it; the query's error stands).
func (c *Client) retainedMessages(ctx context.Context, taskID string, page *contract.MessagesPage, queryErr error) ([]contract.Message, bool, error) {
	var nf *serviceerror.NotFound
	if c.transcripts == nil || !errors.As(queryErr, &nf) {
		return nil, false, nil
	}
	msgs, err := retained.Messages(ctx, c.transcripts, taskID, page)
	if errors.Is(err, retained.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, true, fmt.Errorf("reading the messages of task %q from its transcript: %w", taskID, err)
	}
	return msgs, true, nil
}
