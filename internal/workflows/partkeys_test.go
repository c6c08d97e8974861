package workflows

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/contract"
)

// A content part with a key a part does not have ("bytes": docs/content.md has
// no in-memory form) is refused by the send and ask updates with
// INVALID_INPUT naming the key, instead of being queued with the key
// silently dropped (the part is otherwise a fine text part, which was
// accepted without its bytes); nothing is written.
func TestUpdatesRefuseAnUnknownContentPartKey(t *testing.T) {
	env := newEnv(t, &fakeModel{})
	withBytes := map[string]any{"message": []any{
		map[string]any{"mimeType": "text/plain", "text": "see the picture"},
		map[string]any{"mimeType": "text/plain", "text": "the picture:", "bytes": []int{1, 2, 3}},
	}}
	sent, asked, good := &updateCallbacks{t: t}, &updateCallbacks{t: t}, &updateCallbacks{t: t}
	var before, after []contract.Message
	env.RegisterDelayedCallback(func() {
		before = queryMessages(t, env, nil)
		env.UpdateWorkflow(contract.UpdateSend, "bytes-send", sent, withBytes)
		env.UpdateWorkflow(contract.UpdateAsk, "bytes-ask", asked, withBytes)
		after = queryMessages(t, env, nil)
		env.UpdateWorkflow(contract.UpdateSend, "good", good, textInput("plain"))
	}, time.Second)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(contract.SignalClose, nil) }, time.Minute)
	env.ExecuteWorkflow(contract.WorkflowType, StartArgs{StartArgs: contract.StartArgs{Agent: agentSpec()}})
	require.NoError(t, env.GetWorkflowError())
	for name, cb := range map[string]*updateCallbacks{"send": sent, "ask": asked} {
		require.True(t, cb.done, name)
		require.Error(t, cb.err, "%s: the part's bytes were dropped and the input accepted", name)
		require.Equal(t, contract.ErrInvalidInput, appErrorType(t, cb.err), "%s: %v", name, cb.err)
		for _, want := range []string{"message[1]", `"bytes"`, "file reference"} {
			require.Contains(t, cb.err.Error(), want, name)
		}
	}
	require.Equal(t, before, after, "a refused update writes nothing")
	require.NoError(t, good.err)
	msgs := queryMessages(t, env, nil)
	require.Len(t, msgs, 2, "the plain input and its answer only")
	require.Equal(t, "echo: plain", *msgs[1].Message[0].Text)
}
