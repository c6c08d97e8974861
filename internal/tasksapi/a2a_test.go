package tasksapi

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/a2a"
)

// An A2A task's ID names a run and its turn, and reads back; anything else
// is no task.
func TestA2ATaskIDs(t *testing.T) {
	run := "run-abcdefghijklmnopqrstuvwxyz"
	id, turn, ok := parseA2ATaskID(a2aTaskID(run, 3))
	require.True(t, ok)
	require.Equal(t, run, id)
	require.Equal(t, 3, turn)
	for _, bad := range []string{"", "run-x1", run, run + "-x0", run + "-xa", "other-abcdefghijklmnopqrstuvwxyz-x1"} {
		_, _, ok := parseA2ATaskID(bad)
		require.False(t, ok, bad)
	}
}

// An answer to an input-required task: a data part's approve, else text
// that starts with yes, approve or ok; anything else refuses with the text.
func TestA2AAnswersDecide(t *testing.T) {
	text := func(s string) a2a.Message { return a2a.Message{Parts: []a2a.Part{a2a.TextPart(s)}} }
	for s, want := range map[string]bool{"approve": true, "Yes, go ahead": true, "OK": true, "no": false, "deny: too much": false} {
		got, reason := a2aDecision(text(s))
		require.Equal(t, want, got, s)
		require.Equal(t, s, reason)
	}
	got, reason := a2aDecision(a2a.Message{Parts: []a2a.Part{{Data: json.RawMessage(`{"approve": false, "reason": "over the limit"}`)}, a2a.TextPart("yes")}})
	require.False(t, got, "a data part decides")
	require.Equal(t, "over the limit", reason)
}

// An exchange's turn is found among the recent turns; canceled turns
// before it are counted (they have no output).
func TestA2ATurnInfo(t *testing.T) {
	st := contract.Status{RecentTurns: []contract.TurnInfo{{Turn: 1, StopReason: "end"}, {Turn: 2, Canceled: true}, {Turn: 3, StopReason: "end"}}}
	info, canceled := turnInfo(st, 3)
	require.Equal(t, 3, info.Turn)
	require.Equal(t, 1, canceled)
	info, _ = turnInfo(st, 9)
	require.Nil(t, info)
}

// An answer to a remote agent's question is the reply sent on to it; a data
// part {"approve": false} refuses instead.
func TestA2AReplyToARemoteAgentsQuestion(t *testing.T) {
	no := false
	base := contract.DecideArgs{ID: "t1.c1.i1", Approve: &no, Reason: "Berlin", By: "k"}
	berlin := "Berlin"
	d := a2aReply(a2a.Message{Parts: []a2a.Part{a2a.TextPart("  Berlin ")}}, base)
	require.True(t, *d.Approve)
	require.Equal(t, &berlin, d.Result)
	require.Empty(t, d.Reason)
	require.Equal(t, "k", d.By)
	d = a2aReply(a2a.Message{Parts: []a2a.Part{{Data: []byte(`{"approve": false}`)}}}, base)
	require.False(t, *d.Approve)
	require.Nil(t, d.Result)
}
