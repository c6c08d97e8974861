package activities_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
)

// entries writes n inputs of size bytes each, distinct by their first word.
func longEntries(n, size int) activities.Entries {
	var e activities.Entries
	for i := 0; i < n; i++ {
		text := fmt.Sprintf("entry-%02d ", i)
		e.Write = append(e.Write, input(i, text+strings.Repeat("w", size-len(text)), "2026-11-29T10:00:00.000000Z"))
	}
	return e
}

// The provider's context is smaller than the agent says: each refusal
// halves what is sent, and the turn is answered within the activity.
func TestAContextLengthRefusalShrinksTheRequest(t *testing.T) {
	r := newRig(t)
	r.model.SetContextLimit(2000)
	spec := contract.AgentSpec{Name: "a", Model: "test/echo"} // 128,000 tokens by default
	res, err := r.turn(t, activities.ModelTurnInput{TurnContext: &activities.TurnContext{Agent: spec}, Turn: 1, End: 12, TurnFrom: 11, Entries: longEntries(12, 4000)})
	require.NoError(t, err)
	calls := r.model.Calls()
	require.Len(t, calls, 4, "three refusals, then an answer")
	for i, c := range calls {
		require.Equal(t, i < 3, c.Refused, "call %d", i+1)
		if i > 0 {
			require.Less(t, c.Tokens, calls[i-1].Tokens/2+10, "each try sends about half the last")
		}
	}
	require.Equal(t, 1, res.Calls, "refused requests are not answers")
	require.Equal(t, 12-res.WindowFrom, len(calls[3].Messages), "the window shown starts later")
	last := calls[3].Messages[len(calls[3].Messages)-1].Content
	require.True(t, strings.HasPrefix(last, "entry-11 "), "the newest entry is kept")
}

// A provider that refuses even the smallest request fails the turn at once
// (no retry can help), naming the sizes tried.
func TestAContextLengthRefusalThatNeverFitsFails(t *testing.T) {
	r := newRig(t)
	r.model.SetContextLimit(10)
	spec := contract.AgentSpec{Name: "a", Model: "test/echo"}
	_, err := r.turn(t, activities.ModelTurnInput{TurnContext: &activities.TurnContext{Agent: spec}, Turn: 1, End: 12, TurnFrom: 11, Entries: longEntries(12, 4000)})
	var ae *temporal.ApplicationError
	require.True(t, errors.As(err, &ae), "%v", err)
	require.Equal(t, contract.ErrModel, ae.Type())
	require.True(t, ae.NonRetryable())
	t.Log(ae.Error())
	require.Contains(t, ae.Error(), "the provider refused the request as longer than the model's context at every size tried (about ")
	require.Contains(t, ae.Error(), "This model's maximum context length is 10 tokens")
	calls := r.model.Calls()
	require.LessOrEqual(t, len(calls), 4, "at most three shrinks")
	for _, c := range calls {
		require.True(t, c.Refused)
	}

	// One entry cannot get smaller: no second try of the same request.
	r2 := newRig(t)
	r2.model.SetContextLimit(10)
	_, err = r2.turn(t, activities.ModelTurnInput{TurnContext: &activities.TurnContext{Agent: spec}, Turn: 1, End: 1, Entries: longEntries(1, 4000)})
	require.True(t, errors.As(err, &ae), "%v", err)
	require.Contains(t, ae.Error(), "the request cannot get smaller")
	require.Equal(t, 1, r2.model.CallCount())
}

// The worker remembers what the provider's context took and refused: later
// turns start near its real limit, each refused at most once while it
// learns, then not at all (without the memory every turn was refused three
// times).
func TestLaterTurnsRememberTheProvidersContext(t *testing.T) {
	r := newRig(t)
	r.model.SetContextLimit(2000)
	spec := contract.AgentSpec{Name: "a", Model: "test/echo"}
	_, err := r.turn(t, activities.ModelTurnInput{TurnContext: &activities.TurnContext{Agent: spec}, Turn: 1, End: 60, TurnFrom: 59, Entries: longEntries(60, 400)})
	require.NoError(t, err)
	first := r.model.CallCount()
	require.Greater(t, first, 2, "refused, shrunk, answered")
	taken := r.model.Calls()[first-1].Tokens

	var refusals, sent []int
	for turn := 2; turn <= 9; turn++ {
		before := r.model.CallCount()
		_, err := r.turn(t, activities.ModelTurnInput{TurnContext: &activities.TurnContext{Agent: spec}, Turn: turn, End: 60, TurnFrom: 59})
		require.NoError(t, err, "turn %d", turn)
		n := 0
		for _, c := range r.model.Calls()[before:] {
			if c.Refused {
				n++
			}
		}
		refusals = append(refusals, n)
		sent = append(sent, r.model.Calls()[r.model.CallCount()-1].Tokens)
	}
	t.Logf("refusals in turns 2-9: %v; tokens of their answered requests: %v (turn 1's: %d)", refusals, sent, taken)
	for i, n := range refusals {
		require.LessOrEqual(t, n, 1, "turn %d is refused at most once", i+2)
	}
	require.Equal(t, []int{0, 0}, refusals[len(refusals)-2:], "once learned, no refusal")
	require.GreaterOrEqual(t, sent[len(sent)-1], taken, "and no less context than the halving found")

	// Another model (or another answer room) starts from its own settings.
	before := r.model.CallCount()
	_, err = r.turn(t, activities.ModelTurnInput{TurnContext: &activities.TurnContext{Agent: contract.AgentSpec{Name: "a", Model: "test/echo", MaxTokens: 100}}, Turn: 10, End: 60, TurnFrom: 59})
	require.NoError(t, err)
	require.True(t, r.model.Calls()[before].Refused, "nothing learned for it yet")
}
