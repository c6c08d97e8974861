package activities

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/agenttask/agenttask/contract"
)

// The last guard: a ModelTurn or Shape result over MaxModelResultBytes as
// JSON is a non-retryable MODEL_ERROR naming what was too large, never a
// result Temporal refuses and the retry policy tries without end.
func TestAResultOverTheBoundIsAFinalErrorNamingItsLargestPart(t *testing.T) {
	final := func(err error) string {
		t.Helper()
		var ae *temporal.ApplicationError
		require.True(t, errors.As(err, &ae), "%v", err)
		require.Equal(t, contract.ErrModel, ae.Type())
		require.True(t, ae.NonRetryable())
		return ae.Message()
	}
	big := strings.Repeat("<", 200_000) // 1.2 MB as JSON: each '<' is escaped as \u003c

	require.NoError(t, checkResultSize(&ModelTurnResult{Output: contract.TaskIO{Message: []contract.ContentPart{contract.TextPart(strings.Repeat("a", 200_000))}}}))
	msg := final(checkResultSize(&ModelTurnResult{Output: contract.TaskIO{Message: []contract.ContentPart{contract.TextPart(big)}}}))
	require.Contains(t, msg, "over the 1048576 bytes one may return")
	require.Contains(t, msg, "the largest part is the answer (output)")
	msg = final(checkResultSize(&ModelTurnResult{ToolCalls: []ToolCall{{ID: "c", Name: "f", Arguments: big}}, Offered: []string{"f"}}))
	require.Contains(t, msg, "the largest part is the tool calls")

	require.NoError(t, checkShapeSize(&ShapeResult{Raw: `{"a":1}`, Object: []byte(`{"a":1}`)}))
	obj := `{"a":"` + strings.Repeat("x", 600_000) + `"}`
	msg = final(checkShapeSize(&ShapeResult{Raw: obj, Object: []byte(obj)}))
	require.Contains(t, msg, "the output model's answer is 600008 bytes")
	require.Contains(t, msg, "over the 1048576 bytes one may return")
}
