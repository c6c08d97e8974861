package activities_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	sdkworker "go.temporal.io/sdk/worker"
	"gocloud.dev/blob/memblob"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
	"github.com/agenttask/agenttask/internal/llm"
	"github.com/agenttask/agenttask/internal/testmodel"
	"github.com/agenttask/agenttask/internal/transcript"
	"github.com/agenttask/agenttask/internal/workerkit"
)

// A reset across two workers: run 1 answers three turns on worker A; a
// reset after turn 1 makes run 2, whose turn 2 runs on worker B and turn 3
// on A, which still caches run 1's entries and window; an attempt of run 1
// that outlived the reset then writes on A. Run 2 answers with its own
// answers, its model sees its own conversation, and the late attempt fails
// at once (not retried), leaving the transcript run 2's.
func TestModelTurnsAfterAReset(t *testing.T) {
	m := testmodel.Start()
	t.Cleanup(m.Close)
	bucket := memblob.OpenBucket(nil)
	t.Cleanup(func() { _ = bucket.Close() })
	newWorker := func() (*activities.Activities, workerkit.TranscriptAdapter) {
		tr := workerkit.TranscriptAdapter{Store: transcript.NewFromBucket(bucket)}
		return &activities.Activities{
			Models:     llm.NewRouter(llm.RouterOptions{Endpoints: map[string]llm.Endpoint{"test": {BaseURL: m.URL}}}),
			Transcript: tr,
		}, tr
	}
	workerA, trA := newWorker()
	workerB, _ := newWorker()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	run1 := transcript.Writer{Run: "run-1", Started: t0}
	run2 := transcript.Writer{Run: "run-2", Started: t0.Add(time.Minute)}
	key := activities.TranscriptKey{TaskID: "t1", FirstRunID: "run-1"}
	spec := contract.AgentSpec{Name: "a", Model: "test/echo", Instructions: "Be brief."}
	turn := func(on *activities.Activities, w transcript.Writer, n int, stampAt int, stampedAt string, text string, at string) (*activities.ModelTurnResult, error) {
		t.Helper()
		var s testsuite.WorkflowTestSuite
		env := s.NewTestActivityEnvironment()
		env.SetWorkerOptions(sdkworker.Options{BackgroundActivityContext: transcript.WithWriter(context.Background(), w)})
		env.RegisterActivity(on.ModelTurn)
		pos := stampAt + 1
		in := activities.ModelTurnInput{TurnContext: &activities.TurnContext{Transcript: key, Agent: spec}, Turn: n, End: pos + 1,
			Entries: activities.Entries{Write: []activities.PositionedEntry{input(pos, text, at)}}}
		if stampAt >= 0 {
			in.Stamps = []activities.OutputStamp{{Position: stampAt, Turn: n - 1, CommittedAt: stampedAt}}
		}
		v, err := env.ExecuteActivity(activities.ModelTurnName, in)
		if err != nil {
			return nil, err
		}
		var res activities.ModelTurnResult
		require.NoError(t, v.Get(&res))
		return &res, nil
	}
	seen := func() []string {
		call := m.Calls()[m.CallCount()-1]
		var out []string
		for _, msg := range call.Messages[1:] {
			out = append(out, msg.Content)
		}
		return out
	}

	// Run 1 on worker A.
	for i, q := range []string{"q1", "q2", "q3"} {
		res, err := turn(workerA, run1, i+1, 2*i-1, fmt.Sprintf("2026-03-01T12:00:0%d.500000Z", i-1), q, fmt.Sprintf("2026-03-01T12:00:0%d.000000Z", i))
		require.NoError(t, err)
		require.Equal(t, "echo: "+q, contract.TextOf(res.Output))
	}
	require.Equal(t, []string{"q1", "echo: q1", "q2", "echo: q2", "q3"}, seen())

	// Run 2, reset after turn 1: turn 2 on worker B commits output 1 anew.
	res, err := turn(workerB, run2, 2, 1, "2026-03-01T12:01:00.500000Z", "other", "2026-03-01T12:01:01.000000Z")
	require.NoError(t, err)
	require.Equal(t, "echo: other", contract.TextOf(res.Output), "run 2's own answer, not run 1's of turn 2")
	require.Equal(t, []string{"q1", "echo: q1", "other"}, seen())

	// Turn 3 on worker A, which cached run 1's entries and window.
	res, err = turn(workerA, run2, 3, 3, "2026-03-01T12:01:01.500000Z", "more", "2026-03-01T12:01:02.000000Z")
	require.NoError(t, err)
	require.Equal(t, "echo: more", contract.TextOf(res.Output))
	require.Equal(t, []string{"q1", "echo: q1", "other", "echo: other", "more"}, seen())

	// Run 1's late attempt of turn 3 on worker A: refused, final at once.
	_, err = turn(workerA, transcript.Writer{Run: "run-1", Started: t0.Add(30 * time.Second)}, 3, 3, "2026-03-01T12:00:02.500000Z", "q3", "2026-03-01T12:00:02.000000Z")
	var ae *temporal.ApplicationError
	require.True(t, errors.As(err, &ae), "%v", err)
	require.True(t, ae.NonRetryable(), "a superseded write is not retried: %v", err)
	require.Equal(t, contract.ErrInternal, ae.Type())
	require.ErrorContains(t, err, "replaced")

	stored, err := trA.Read(context.Background(), key, 0, 5)
	require.NoError(t, err)
	var texts []string
	for _, e := range stored {
		texts = append(texts, contract.TextOf(e.TaskIO))
	}
	require.Equal(t, []string{"q1", "echo: q1", "other", "echo: other", "more"}, texts)
	require.Equal(t, "2026-03-01T12:01:00.500000Z", stored[1].CommittedAt, "output 1 as run 2 committed it")
}
