package workflows

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/contract"
)

// Tasks started before rules.boundedParts replay their inputs as they were
// accepted: a caller's wrong sizeBytes is replaced, not refused, and more
// than MaxMessageParts parts are taken; today's check refuses both.
func TestCheckInputBeforeAcceptsWhatOlderTasksAccepted(t *testing.T) {
	a := &contract.Agent{}
	claimed := int64(999)
	wrongSize := contract.TaskIO{Message: []contract.ContentPart{{MimeType: "text/plain", Text: ptr("four"), SizeBytes: &claimed}}}
	_, err := contract.CheckInput(a, wrongSize)
	require.ErrorContains(t, err, "sizeBytes: 999")
	out, err := checkInputBefore(a, wrongSize)
	require.NoError(t, err)
	require.Equal(t, int64(4), *out.Message[0].SizeBytes, "the runtime's size replaces the caller's")

	many := contract.TaskIO{Message: make([]contract.ContentPart, contract.MaxMessageParts+1)}
	for i := range many.Message {
		many.Message[i] = contract.ContentPart{MimeType: "text/plain", Text: ptr("x")}
	}
	_, err = contract.CheckInput(a, many)
	require.ErrorContains(t, err, "content parts, more than")
	_, err = checkInputBefore(a, many)
	require.NoError(t, err)

	_, err = checkInputBefore(a, contract.TaskIO{})
	require.ErrorContains(t, err, "message is required", "the checks both rules share still refuse")
}

func ptr[T any](v T) *T { return &v }
