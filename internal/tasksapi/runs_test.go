package tasksapi

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
)

// The server may cancel the ask's long poll a moment before the API's own
// deadline fires (RST_STREAM CANCEL): the SDK's timeout error is still a
// timeout of the wait (504 run_timeout), never an internal error; a run's
// own failure is not.
func TestWaitEndedTellsTheWaitFromTheRun(t *testing.T) {
	rst := errors.New("stream terminated by RST_STREAM with error code: CANCEL")
	require.True(t, waitEnded(client.NewWorkflowUpdateServiceTimeoutOrCanceledError(rst)))
	require.True(t, waitEnded(fmt.Errorf("ask: %w", client.NewWorkflowUpdateServiceTimeoutOrCanceledError(rst))))
	require.False(t, waitEnded(rst))
	require.False(t, waitEnded(temporal.NewNonRetryableApplicationError("bad", "MODEL_ERROR", nil)))
	require.False(t, waitEnded(nil))
}
