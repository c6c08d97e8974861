package activities

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/agenttask/agenttask/mount"
	"github.com/agenttask/agenttask/schema"
)

func TestBackoffDoublesToAMinuteAndHonoursRetryAfter(t *testing.T) {
	want := []time.Duration{1, 2, 4, 8, 16, 32, 60, 60, 60}
	for i, w := range want {
		require.Equal(t, w*time.Second, backoff(int32(i+1), 0), "after attempt %d", i+1)
	}
	require.Equal(t, 60*time.Second, backoff(1000, 0))
	require.Equal(t, 90*time.Second, backoff(1, 90*time.Second), "Retry-After wins")
	require.Equal(t, 5*time.Minute, backoff(3, time.Hour), "Retry-After is honoured up to five minutes")
}

func TestClipKeepsRunes(t *testing.T) {
	require.Equal(t, "abc", clip("abc", 5))
	require.Equal(t, "ab…", clip("abcdef", 2))
	require.Equal(t, "a…", clip("aé", 2), "never cuts a rune in half")
}

func TestWaitOutPassesFinalErrorsAndMakesRefusalsFinal(t *testing.T) {
	a := &Activities{}
	ctx := context.Background()
	final := temporal.NewNonRetryableApplicationError("bad request", schema.ErrModel, nil)
	require.Same(t, final, a.waitOut(ctx, Retry{Timeout: "1h"}, final), "a final error passes as it is")
	require.NoError(t, a.waitOut(ctx, Retry{Timeout: "1h"}, nil))

	var ae *temporal.ApplicationError
	err := a.waitOut(ctx, Retry{Timeout: "1h"}, &schema.Error{Type: mount.ErrFileChanged, Message: "task://a.png changed"})
	require.True(t, errors.As(err, &ae))
	require.True(t, ae.NonRetryable(), "a typed refusal is never retried")
	require.Equal(t, mount.ErrFileChanged, ae.Type())

	transient := temporal.NewApplicationError("HTTP 503", errModelUnavailable)
	require.Same(t, transient, a.waitOut(ctx, Retry{}, transient), "older rules: the retry policy counts attempts")
}
