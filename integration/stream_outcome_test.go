package integration

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/internal/tasksapi"
	"github.com/agenttask/agenttask/internal/testmodel"
)

// A stream always ends with its outcome (docs/streaming.md#a-runs-end):
// "done comes last"; "error ... ends the stream". A model call cut short and
// tried again, or a JSON answer asked again, does not end the POST stream:
// it goes on with the turn's next answer, its events marked with the
// answer's number (attempt 2, 3, ...: docs/streaming.md, a client drops the
// text it showed of the turn when attempt rises), and ends with the turn's
// done or error. A client that lost its connection still resumes with
// Last-Event-ID without a repeated event.

// answerOf is what a client following docs/streaming.md shows of a
// turn's events: each text, dropping what it showed when attempt rises.
// It also returns each answer's text by its attempt (absent counts as 1).
func answerOf(t *testing.T, events []sseEvent) (string, map[float64]string) {
	t.Helper()
	shown, attempt := "", 0.0
	byAttempt := map[float64]string{}
	for _, e := range events {
		a, _ := e.Data["attempt"].(float64)
		if a == 0 {
			a = 1
		}
		if e.typ() != "text" {
			require.GreaterOrEqual(t, a, attempt, "the turn's end is of its last answer: %v", eventData(events))
			continue
		}
		require.GreaterOrEqual(t, a, attempt, "answers never go back: %v", eventData(events))
		if a > attempt {
			shown, attempt = "", a
		}
		shown += e.Data["text"].(string)
		byAttempt[a] += e.Data["text"].(string)
	}
	return shown, byAttempt
}

// requireEndsWith checks that the stream's last event is typ, that it is
// the only done or error, and that the server ended the stream there.
func requireEndsWith(t *testing.T, typ string, events []sseEvent) sseEvent {
	t.Helper()
	require.NotEmpty(t, events)
	last := events[len(events)-1]
	require.Equal(t, typ, last.typ(), "the stream's last event (seed 004: %s ends it): %v", typ, eventData(events))
	for _, e := range events[:len(events)-1] {
		require.Equal(t, "text", e.typ(), "only text before the end: %v", eventData(events))
	}
	return last
}

// The model call fails after three streamed pieces (the connection cut
// before its finish), its retry fails with a 500 before any text, and the
// third call answers: the POST stream carries the cut answer, then the
// answer that came, marked attempt 2, and ends with done. Each answer's
// text is sent once. A reconnect with Last-Event-ID from the cut, and from
// the middle of the second answer, reads exactly the POST's events after
// it.
func TestARetriedModelCallEndsThePOSTStreamWithDone(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	api := newAPI(t, h)
	createSeedTask(t, api, seedTask())

	// The first call holds its second piece until the POST has read the
	// first: the POST carries the cut answer live (not skipped as stored).
	sawFirst := make(chan struct{})
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		switch c.Seq {
		case 1:
			return testmodel.Reply{Chunks: []string{"Pole ", "sana, ", "Amina. ", "never sent"}, BreakAfter: 3, BeforeChunk: func(i int) {
				if i == 1 {
					select {
					case <-sawFirst:
					case <-time.After(30 * time.Second): // fails below: the POST never read the first piece
					}
				}
			}}
		case 2:
			return testmodel.Reply{Status: http.StatusInternalServerError, ErrorMessage: "the model is overloaded"}
		}
		return testmodel.Reply{Chunks: []string{"Habari, ", "Amina. ", "It left ", "today."}}
	})
	post := openEvents(t, api.url, "/v1/tasks/support-reply/run", callKey, streamBody)
	require.Equal(t, http.StatusOK, post.Resp.StatusCode)
	id := post.Resp.Header.Get("X-Request-Id")
	first := post.next(20 * time.Second)
	require.Equal(t, map[string]any{"type": "text", "text": "Pole "}, first.Data, "the first piece, alone")
	close(sawFirst)
	events := append([]sseEvent{first}, post.ended(90*time.Second)...)
	t.Logf("the POST stream: %v", eventData(events))

	done := requireEndsWith(t, "done", events)
	require.Equal(t, "end", done.Data["stopReason"])
	require.Equal(t, 2.0, done.Data["attempt"], "done is the second answer's")
	requireIDsFrom(t, 1, events)
	shown, byAttempt := answerOf(t, events)
	require.Equal(t, "Habari, Amina. It left today.", shown, "the answer, for a client that drops the text when attempt rises")
	require.Equal(t, map[float64]string{1: "Pole sana, Amina. ", 2: "Habari, Amina. It left today."}, byAttempt,
		"each answer's text once: the cut answer's three pieces, then the next answer whole")
	require.Equal(t, 3, h.model.CallCount())
	eventually(t, 60*time.Second, "the answer recorded", func() bool {
		r := api.call("GET", "/v1/runs/"+id, viewKey, nil)
		return r.Status == http.StatusOK && r.data()["outputs"] == 1.0
	})
	require.Equal(t, shown, answerText(t, api, id), "the recorded answer is the one done ends")

	// The reconnect after the cut answer's last piece: the rest, no repeat.
	var cut int64
	for _, e := range events {
		if _, marked := e.Data["attempt"]; !marked {
			cut = e.ID
		}
	}
	again := openEvents(t, api.url, "/v1/runs/"+id+"/events", viewKey, nil, "Last-Event-ID", strconv.FormatInt(cut, 10))
	require.Equal(t, http.StatusOK, again.Resp.StatusCode)
	requireTail(t, events, cut, again.until("done", 20*time.Second))
	// From inside the second answer (after its first event): its rest.
	var mid int64
	for _, e := range events {
		if e.Data["attempt"] == 2.0 {
			mid = e.ID
			break
		}
	}
	rest := openEvents(t, api.url, "/v1/runs/"+id+"/events", viewKey, nil, "Last-Event-ID", strconv.FormatInt(mid, 10))
	requireTail(t, events, mid, rest.until("done", 20*time.Second))
	// From the start, the answer stored cut short is skipped whole.
	whole := openEvents(t, api.url, "/v1/runs/"+id+"/events", viewKey, nil).until("done", 20*time.Second)
	requireTail(t, events, cut, whole)
}

// A JSON answer that does not fit the task's schema is asked again, three
// calls in all, then the run fails: the POST stream carries each answer
// once, marked with its number, and ends with error model_error (in place
// of done). A reconnect after the first answer reads the rest without a
// repeat: the POST's events after it, less an answer stored cut short
// (skipped whole, as documented), up to the same error.
func TestAnUnfitJSONAnswerEndsThePOSTStreamWithError(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	api := newAPI(t, h)
	createSeedTask(t, api, withField(withField(seedTask(), "json", true), "schema",
		map[string]any{"type": "object", "properties": map[string]any{"reply": map[string]any{"type": "string"}}, "required": []any{"reply"}}))

	sawFirst := make(chan struct{})
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		rep := testmodel.Reply{Chunks: []string{`{"other": `, strconv.Itoa(c.Seq) + `}`}}
		if c.Seq == 1 {
			rep.BeforeChunk = func(i int) {
				if i == 1 {
					select {
					case <-sawFirst:
					case <-time.After(30 * time.Second):
					}
				}
			}
		}
		return rep
	})
	post := openEvents(t, api.url, "/v1/tasks/support-reply/run", callKey, streamBody)
	require.Equal(t, http.StatusOK, post.Resp.StatusCode)
	id := post.Resp.Header.Get("X-Request-Id")
	first := post.next(20 * time.Second)
	require.Equal(t, map[string]any{"type": "text", "text": `{"other": `}, first.Data)
	close(sawFirst)
	events := append([]sseEvent{first}, post.ended(90*time.Second)...)
	t.Logf("the POST stream: %v", eventData(events))

	failed := requireEndsWith(t, "error", events)
	require.Equal(t, tasksapi.CodeModelError, failed.Data["code"])
	require.Contains(t, failed.Data["detail"], "did not fit")
	require.Equal(t, 3.0, failed.Data["attempt"], "the third answer failed the run")
	requireIDsFrom(t, 1, events)
	_, byAttempt := answerOf(t, events)
	require.Equal(t, map[float64]string{1: `{"other": 1}`, 2: `{"other": 2}`, 3: `{"other": 3}`}, byAttempt, "each answer once, never two spliced")
	require.Equal(t, 3, h.model.CallCount())

	var cut int64
	for _, e := range events {
		if _, marked := e.Data["attempt"]; !marked {
			cut = e.ID
		}
	}
	again := openEvents(t, api.url, "/v1/runs/"+id+"/events", viewKey, nil, "Last-Event-ID", strconv.FormatInt(cut, 10))
	require.Equal(t, http.StatusOK, again.Resp.StatusCode)
	resumed := again.ended(20 * time.Second)
	requireSubsequence(t, events, cut, resumed)
	require.Equal(t, failed, resumed[len(resumed)-1], "the reconnect ends with the same error")
	_, resumedAnswers := answerOf(t, resumed)
	for a, text := range resumedAnswers {
		require.Equal(t, byAttempt[a], text, "answer %v whole, once", a)
	}
}

// requireSubsequence checks that events are some of all's events after
// id after, in order, each once, ids included: nothing the client read
// comes again, nothing new appears.
func requireSubsequence(t *testing.T, all []sseEvent, after int64, events []sseEvent) {
	t.Helper()
	require.NotEmpty(t, events)
	i := 0
	for _, e := range events {
		require.Greater(t, e.ID, after, "after Last-Event-ID: %v", e.Data)
		for i < len(all) && all[i].ID != e.ID {
			i++
		}
		require.Less(t, i, len(all), "event %d is one the POST read after %d, in order: %v", e.ID, after, eventData(events))
		require.Equal(t, all[i], e)
		i++
	}
}

// A run canceled while its answer streams: the model call is cut short,
// and the POST stream ends with the run's error (run_closed), not cut off.
func TestACanceledRunEndsThePOSTStreamWithError(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	api := newAPI(t, h)
	createSeedTask(t, api, seedTask())

	release := make(chan struct{})
	defer close(release)
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		return testmodel.Reply{Chunks: []string{"Pole ", "sana"}, BeforeChunk: func(i int) {
			if i == 1 {
				select {
				case <-release:
				case <-time.After(60 * time.Second):
				}
			}
		}}
	})
	post := openEvents(t, api.url, "/v1/tasks/support-reply/run", callKey, streamBody)
	require.Equal(t, http.StatusOK, post.Resp.StatusCode)
	id := post.Resp.Header.Get("X-Request-Id")
	first := post.next(20 * time.Second)
	require.Equal(t, map[string]any{"type": "text", "text": "Pole "}, first.Data)
	r := api.call("POST", "/v1/runs/"+id+"/cancel", callKey, nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	events := append([]sseEvent{first}, post.ended(60*time.Second)...)
	t.Logf("the POST stream: %v", eventData(events))
	failed := requireEndsWith(t, "error", events)
	require.Equal(t, tasksapi.CodeRunClosed, failed.Data["code"])
}
