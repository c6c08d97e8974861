package workflows

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
)

// callContexts fills in the turn context a model call names by digest, as
// a worker does, from the calls that carried it whole; a call naming one
// no earlier call sent fails the test.
type callContexts map[string]activities.TurnContext

func (m callContexts) whole(t testing.TB, in activities.ModelTurnInput) activities.ModelTurnInput {
	if in.Context == "" {
		return in
	}
	if in.TurnContext != nil {
		m[in.Context] = *in.TurnContext
		return in
	}
	c, ok := m[in.Context]
	if !ok {
		t.Errorf("a model call names the turn context %s, which no earlier call carried", in.Context)
		return in
	}
	in.TurnContext = &c
	return in
}

// On rulesLeanTurns the run's first model call carries the turn context
// whole with its digest, every later call the digest alone, and the task
// answers turn-context with that context (an unknown digest with an error).
func TestLaterModelCallsNameTheRunsContextByDigest(t *testing.T) {
	m := &fakeModel{}
	env := newEnv(t, m)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(contract.SignalInput, textInput("second")) }, time.Second)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(contract.SignalInput, textInput("third")) }, 2*time.Second)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(contract.SignalClose, nil) }, 3*time.Second)
	env.ExecuteWorkflow(contract.WorkflowType, StartArgs{StartArgs: contract.StartArgs{Agent: agentSpec(), Input: textInput("first")}})
	require.NoError(t, env.GetWorkflowError())

	require.Len(t, m.sent, 3)
	first := m.sent[0]
	require.Len(t, first.Context, 32, "a 16-byte digest in hex")
	require.NotNil(t, first.TurnContext, "the first call carries the context whole")
	require.NotEmpty(t, first.Transcript.TaskID)
	require.Equal(t, agentSpec().Name, first.Agent.Name)
	require.Equal(t, first.TurnContext.Digest(), first.Context)
	for _, in := range m.sent[1:] {
		require.Equal(t, first.Context, in.Context)
		require.Nil(t, in.TurnContext, "a later call carries the digest alone")
		require.Len(t, in.Write, 1, "and what is new: its input")
		require.Len(t, in.Stamps, 1, "and the previous output's stamp")
	}
	require.Equal(t, *first.TurnContext, *m.calls[2].TurnContext, "the context filled in by digest is the first call's")
	require.Equal(t, agentSpec().Name, m.calls[2].Agent.Name)

	v, err := env.QueryWorkflow(activities.QueryTurnContext, first.Context)
	require.NoError(t, err)
	var got activities.TurnContext
	require.NoError(t, v.Get(&got))
	require.Equal(t, *first.TurnContext, got)

	_, err = env.QueryWorkflow(activities.QueryTurnContext, "0123456789abcdef0123456789abcdef")
	require.ErrorContains(t, err, "sent no model call the turn context")
}
