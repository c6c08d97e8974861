package activities

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
