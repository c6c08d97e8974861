package integration

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/internal/testmodel"
)

// seedReader reads one turn's answer as
// docs/streaming.md#what-a-client-reads tells a client to: show each text;
// done ends the answer, error a failed run; a stream that ends without
// either was cut off, so reconnect to GET /v1/runs/{id}/events with
// Last-Event-ID; a text whose attempt is higher than the turn's text shown
// so far begins the answer again, so drop what was shown.
type seedReader struct {
	t           *testing.T
	api         *apiServer
	run         string
	shown       string
	attempt     float64
	lastID      int64
	connections int
	errors      []sseEvent // every error event on any connection
}

// read reads conn, reconnecting after each cut, until the turn's done.
// It returns the done event; it fails the test after 5 connections.
func (r *seedReader) read(conn *sseClient) sseEvent {
	r.t.Helper()
	for {
		r.connections++
		for {
			e, open := r.next(conn)
			if !open {
				break // cut off
			}
			if e.ID > 0 {
				r.lastID = e.ID
			}
			switch e.typ() {
			case "text":
				a, _ := e.Data["attempt"].(float64)
				if a == 0 {
					a = 1
				}
				if a > r.attempt {
					r.shown, r.attempt = "", a
				}
				r.shown += e.Data["text"].(string)
			case "done":
				r.attempt = 0 // the next turn starts at its first answer
				conn.Close()
				return e
			case "error":
				r.errors = append(r.errors, e)
				require.FailNow(r.t, "an error event on a run that goes on", "%v", e.Data)
			}
		}
		require.Less(r.t, r.connections, 5, "still cut off after %d connections", r.connections)
		conn = openEvents(r.t, r.api.url, "/v1/runs/"+r.run+"/events", viewKey, nil, "Last-Event-ID", strconv.FormatInt(r.lastID, 10))
		require.Equal(r.t, http.StatusOK, conn.Resp.StatusCode)
	}
}

// next is conn's next event, or open false once the server ended it.
func (r *seedReader) next(conn *sseClient) (sseEvent, bool) {
	select {
	case e, ok := <-conn.events:
		return e, ok
	case <-time.After(60 * time.Second):
		require.FailNow(r.t, "no event and no end within 60s")
	}
	return sseEvent{}, false
}

// A streamed run whose model call is retried ends with done for a client
// that reads as documented, with the answer exactly once, and no error event
// was sent on any connection. The same holds on GET /events for a follow-up
// turn whose call is retried. Neither stream is cut off at the retry
// (docs/streaming.md#retries-never-repeat-text): each goes on with the next
// answer (attempt 2) to its done, on its first connection.
func TestARetriedModelCallEndsWithDoneForASeedClient(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	api := newAPI(t, h)
	createSeedTask(t, api, seedTask())

	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		if c.Seq == 1 { // the first call breaks after two deltas: Temporal retries it
			return testmodel.Reply{Chunks: []string{"Pole ", "sana, ", "never sent"}, BreakAfter: 2}
		}
		return testmodel.Reply{Chunks: []string{"Habari, ", "Amina. ", "It left today."}}
	})
	post := openEvents(t, api.url, "/v1/tasks/support-reply/run", callKey, streamBody)
	require.Equal(t, http.StatusOK, post.Resp.StatusCode)
	id := post.Resp.Header.Get("X-Request-Id")
	r := &seedReader{t: t, api: api, run: id}
	done := r.read(post)
	require.Equal(t, "Habari, Amina. It left today.", r.shown, "the answer, exactly once")
	require.Equal(t, "end", done.Data["stopReason"])
	require.Empty(t, r.errors)
	require.Equal(t, 1, r.connections, "the POST stream carried the turn to its done (issue 43: it is not cut off at the retry)")
	require.Equal(t, 2, h.model.CallCount())
	require.Equal(t, r.shown, answerText(t, api, id))

	// A follow-up whose call breaks too, read on /events from the first
	// turn's done on.
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		if c.Seq == 3 {
			return testmodel.Reply{Chunks: []string{"Tomorrow ", "at ", "noon"}, BreakAfter: 2}
		}
		return testmodel.Reply{Chunks: []string{"It arrives ", "on Friday."}}
	})
	follow := openEvents(t, api.url, "/v1/runs/"+id+"/events", viewKey, nil, "Last-Event-ID", strconv.FormatInt(r.lastID, 10))
	resp := api.call("POST", "/v1/runs/"+id+"/inputs", callKey, map[string]any{"message": []any{map[string]any{"mimeType": "text/plain", "text": "When?"}}})
	require.Equal(t, http.StatusOK, resp.Status, "%s", resp.Raw)
	r2 := &seedReader{t: t, api: api, run: id, lastID: r.lastID}
	r2.read(follow)
	require.Equal(t, "It arrives on Friday.", r2.shown)
	require.Empty(t, r2.errors)
	require.Equal(t, 1, r2.connections, "the /events stream carried the retried turn to its done too")
	require.Equal(t, 4, h.model.CallCount())
}
