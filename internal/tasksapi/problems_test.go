package tasksapi

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"

	"github.com/agenttask/agenttask/internal/codec"
)

// Once the process has met data under a key it does not hold, a fault that
// is that key, or Temporal's refusal of a workflow whose workflow tasks
// fail, is 503 "Encryption key missing" naming the key and
// AGENT_CODEC_KEYS instead of 500 internal; other faults stay 500.
func TestMissingKeyProblem(t *testing.T) {
	codec.ForgetMissingKeys()
	t.Cleanup(codec.ForgetMissingKeys)
	const failedState = "the store failed: failed workflow update: Unable to perform workflow execution update due to Workflow Task in failed state."
	require.Equal(t, http.StatusInternalServerError, problem(CodeInternal, failedState, "").Status, "no key met: still a fault")

	k1, err := codec.New(codec.Keys{"k1": make([]byte, codec.KeySize)}, "k1")
	require.NoError(t, err)
	sealed, err := k1.Encode([]*commonpb.Payload{{Data: []byte(`"x"`)}})
	require.NoError(t, err)
	var none *codec.Codec
	_, decodeErr := none.Decode(sealed)
	require.Error(t, decodeErr)

	for _, detail := range []string{failedState, "reading the run: " + decodeErr.Error()} {
		p := problem(CodeInternal, detail, "")
		require.Equal(t, http.StatusServiceUnavailable, p.Status, detail)
		require.Equal(t, CodeUnavailable, p.Code)
		require.Equal(t, TitleMissingKey, p.Title)
		require.Contains(t, p.Detail, `this call needs data encrypted with key "k1", which this process cannot read: encrypted with key "k1", but AGENT_CODEC_KEYS is not set`)
		require.True(t, strings.HasSuffix(p.Detail, "["+detail+"]"), p.Detail)
	}
	require.Equal(t, http.StatusInternalServerError, problem(CodeInternal, "the store failed: connection reset", "").Status)
	require.Contains(t, problem(CodeRunNotFound, "no run r1 was started by this API", "").Detail,
		`no run r1 was started by this API, or its record is encrypted with a key this process cannot read: it has met data under key "k1"`)
	require.Equal(t, "no run r1", problem(CodeRunNotFound, "no run r1", "").Detail)
}
