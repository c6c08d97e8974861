package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/internal/broker"
	"github.com/agenttask/agenttask/internal/tasksapi"
	"github.com/agenttask/agenttask/internal/testmodel"
	"github.com/agenttask/agenttask/worker"
)

// sseEvent is one server-sent event as a client reads it.
type sseEvent struct {
	ID   int64 // 0 when the event had no id
	Data map[string]any
}

func (e sseEvent) typ() string { s, _ := e.Data["type"].(string); return s }

// sseClient reads a stream of server-sent events over real HTTP.
type sseClient struct {
	t        *testing.T
	Resp     *http.Response
	cancel   context.CancelFunc
	events   chan sseEvent
	done     chan struct{}
	comments atomic.Int32
}

// openEvents sends a request and reads its answer as events. body nil: GET.
func openEvents(t *testing.T, base, path, key string, body any, header ...string) *sseClient {
	t.Helper()
	require.NotEmpty(t, natsURL, "streaming needs the broker: agentdev's, or AGENT_IT_NATS_URL beside AGENT_IT_TEMPORAL_ADDRESS")
	ctx, cancel := context.WithCancel(context.Background())
	method, payload := http.MethodGet, []byte(nil)
	if body != nil {
		method = http.MethodPost
		var err error
		payload, err = json.Marshal(body)
		require.NoError(t, err)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, bytes.NewReader(payload))
	require.NoError(t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+key)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	c := &sseClient{t: t, Resp: resp, cancel: cancel, events: make(chan sseEvent, 1000), done: make(chan struct{})}
	t.Cleanup(c.Close)
	if resp.StatusCode != http.StatusOK {
		return c
	}
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	go c.read()
	return c
}

func (c *sseClient) read() {
	defer close(c.done)
	defer close(c.events)
	sc := bufio.NewScanner(c.Resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var e sseEvent
	var data strings.Builder
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if data.Len() > 0 {
				e.Data = map[string]any{}
				if err := json.Unmarshal([]byte(data.String()), &e.Data); err != nil {
					e.Data = map[string]any{"type": "unparsable", "raw": data.String()}
				}
				c.events <- e
			}
			e, data = sseEvent{}, strings.Builder{}
		case strings.HasPrefix(line, ":"):
			c.comments.Add(1)
		case strings.HasPrefix(line, "id: "):
			e.ID, _ = strconv.ParseInt(strings.TrimPrefix(line, "id: "), 10, 64)
		case strings.HasPrefix(line, "data: "):
			data.WriteString(strings.TrimPrefix(line, "data: "))
		}
	}
}

// next is the next event; it fails the test after timeout.
func (c *sseClient) next(timeout time.Duration) sseEvent {
	c.t.Helper()
	select {
	case e, ok := <-c.events:
		require.True(c.t, ok, "the stream ended")
		return e
	case <-time.After(timeout):
		require.FailNow(c.t, "no event within "+timeout.String())
	}
	return sseEvent{}
}

// until reads events up to and including the first of type typ.
func (c *sseClient) until(typ string, timeout time.Duration) []sseEvent {
	c.t.Helper()
	var out []sseEvent
	for {
		e := c.next(timeout)
		out = append(out, e)
		if e.typ() == typ {
			return out
		}
	}
}

// ended waits for the server to end the stream and returns what came first.
func (c *sseClient) ended(timeout time.Duration) []sseEvent {
	c.t.Helper()
	var out []sseEvent
	deadline := time.After(timeout)
	for {
		select {
		case e, ok := <-c.events:
			if !ok {
				return out
			}
			out = append(out, e)
		case <-deadline:
			require.FailNow(c.t, "the stream did not end within "+timeout.String())
		}
	}
}

// Close drops the connection.
func (c *sseClient) Close() {
	c.cancel()
	c.Resp.Body.Close()
}

// textOf joins the text events.
func textOf(events []sseEvent) string {
	var b strings.Builder
	for _, e := range events {
		if e.typ() == "text" {
			b.WriteString(e.Data["text"].(string))
		}
	}
	return b.String()
}

// requireIDsFrom checks that events carry increasing ids, the first at
// least first. An id is the event's stream sequence in the broker, so other
// runs' events leave gaps; whether a resumed stream skipped or repeated
// an event is checked against a replay (requireTail).
func requireIDsFrom(t *testing.T, first int64, events []sseEvent) {
	t.Helper()
	for i, e := range events {
		require.GreaterOrEqual(t, e.ID, first, "event %d: %v", i, e.Data)
		first = e.ID + 1
	}
}

// requireTail checks that events are exactly all's events after id after:
// no gap, no repeat.
func requireTail(t *testing.T, all []sseEvent, after int64, events []sseEvent) {
	t.Helper()
	var want []sseEvent
	for _, e := range all {
		if e.ID > after {
			want = append(want, e)
		}
	}
	require.Equal(t, want, events)
}

// answerText is the run's last output, read with GET /v1/runs/{id}/messages.
func answerText(t *testing.T, api *apiServer, id string) string {
	t.Helper()
	r := api.call("GET", "/v1/runs/"+id+"/messages", viewKey, nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	msgs := r.JSON["data"].([]any)
	last := msgs[len(msgs)-1].(map[string]any)
	require.Equal(t, "output", last["type"])
	var b strings.Builder
	for _, p := range last["message"].([]any) {
		if s, ok := p.(map[string]any)["text"].(string); ok {
			b.WriteString(s)
		}
	}
	return b.String()
}

var streamBody = map[string]any{"input": "My order is late.", "variables": map[string]any{"customer": "Amina"}, "stream": true}

// The model holds its second delta until the HTTP client has read the
// first: the answer reaches the client as it is written, not buffered.
func TestStreamedRunDeliversTextAsTheModelWritesIt(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	api := newAPI(t, h)
	createSeedTask(t, api, seedTask())

	gotFirst := make(chan struct{})
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		return testmodel.Reply{Chunks: []string{"Pole sana, ", "Amina."}, BeforeChunk: func(i int) {
			if i == 1 {
				select {
				case <-gotFirst:
				case <-time.After(30 * time.Second): // the test fails below: the client never saw the first delta alone
				}
			}
		}}
	})
	s := openEvents(t, api.url, "/v1/tasks/support-reply/run", callKey, streamBody)
	require.Equal(t, http.StatusOK, s.Resp.StatusCode)
	id := s.Resp.Header.Get("X-Request-Id")
	require.Regexp(t, `^run-[a-z2-7]{26}$`, id)
	require.Equal(t, "KE", s.Resp.Header.Get("X-Ai-Processed-In"))

	first := s.next(20 * time.Second)
	require.Equal(t, map[string]any{"type": "text", "text": "Pole sana, "}, first.Data, "the first delta, alone: the second is still held by the model")
	close(gotFirst)
	rest := s.until("done", 30*time.Second)
	events := append([]sseEvent{first}, rest...)
	requireIDsFrom(t, 1, events)
	require.Equal(t, "Pole sana, Amina.", textOf(events))
	done := events[len(events)-1].Data
	require.Equal(t, "end", done["stopReason"])
	usage := done["usage"].(map[string]any)
	in, out := usage["inputTokens"].(float64), usage["outputTokens"].(float64)
	require.Greater(t, in, 0.0)
	require.Equal(t, float64(ceilUnits(in, out)), usage["units"])
	require.Nil(t, done["json"])
	require.Empty(t, s.ended(10*time.Second), "the run's stream ends with its done")
	require.True(t, h.model.Calls()[0].Stream, "the model was asked to stream")

	// The recorded answer is the streamed one.
	require.Equal(t, "Pole sana, Amina.", answerText(t, api, id))

	// GET /events from the start replays the same events; a follow-up's
	// turn follows on the same stream, with its own done.
	all := openEvents(t, api.url, "/v1/runs/"+id+"/events", viewKey, nil)
	replay := all.until("done", 10*time.Second)
	require.Equal(t, events, replay, "the same events, ids included")
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply { return testmodel.Reply{Chunks: []string{"It left ", "today."}} })
	r := api.call("POST", "/v1/runs/"+id+"/inputs", callKey, map[string]any{"message": []any{map[string]any{"mimeType": "text/plain", "text": "When?"}}})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	second := all.until("done", 30*time.Second)
	require.Equal(t, "It left today.", textOf(second))
	requireIDsFrom(t, replay[len(replay)-1].ID+1, second)
	recordHistory(t, id, "", "streamed-run-with-follow-up")

	// A JSON task's done carries the answer parsed.
	r = api.call("PUT", "/v1/tasks/support-reply", devKey, withField(withField(seedTask(), "json", true), "schema",
		map[string]any{"type": "object", "properties": map[string]any{"reply": map[string]any{"type": "string"}}, "required": []any{"reply"}}))
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		return testmodel.Reply{Chunks: []string{`{"reply": `, `"Pole sana"}`}}
	})
	j := openEvents(t, api.url, "/v1/tasks/support-reply/run", callKey, streamBody)
	jsonEvents := j.until("done", 30*time.Second)
	require.Equal(t, `{"reply": "Pole sana"}`, textOf(jsonEvents))
	require.Equal(t, map[string]any{"reply": "Pole sana"}, jsonEvents[len(jsonEvents)-1].Data["json"])

	// A JSON answer that does not fit the schema, three times: error in
	// place of done. A refused answer asked again is no error (the run goes
	// on), nor the stream's end (docs/streaming.md#a-runs-end): the POST
	// stream goes on with the next answer whole, marked with its number,
	// until the third refusal fails the run, and ends with that error.
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply { return testmodel.Reply{Chunks: []string{`{"other": `, `1}`}} })
	bad := openEvents(t, api.url, "/v1/tasks/support-reply/run", callKey, streamBody)
	badEvents := bad.ended(60 * time.Second)
	require.NotEmpty(t, badEvents)
	last := badEvents[len(badEvents)-1]
	require.Equal(t, "error", last.typ(), "the stream ends with the run's error: %v", eventData(badEvents))
	require.Equal(t, tasksapi.CodeModelError, last.Data["code"])
	require.Contains(t, last.Data["detail"], "did not fit")
	require.Equal(t, 3.0, last.Data["attempt"], "the third answer failed the run")
	// Each answer whole, once, its number rising: the POST's own first
	// answer on (or, on a slow machine where that answer was refused
	// before the API began reading, a later one: an answer known to be cut
	// short is skipped).
	answers := map[float64]string{}
	attempt := 0.0
	for _, e := range badEvents[:len(badEvents)-1] {
		require.Equal(t, "text", e.typ(), "text, then the error: %v", eventData(badEvents))
		a := 1.0 // the turn's first answer carries no attempt
		if v, ok := e.Data["attempt"].(float64); ok {
			a = v
		}
		require.GreaterOrEqual(t, a, attempt, "answers in order: %v", eventData(badEvents))
		attempt = a
		answers[a] += e.Data["text"].(string)
	}
	require.NotEmpty(t, answers)
	require.Contains(t, answers, 3.0, "the third answer's text before its error")
	for a, text := range answers {
		require.Equal(t, `{"other": 1}`, text, "answer %v: one answer's text, never two spliced", a)
	}
	requireIDsFrom(t, 1, badEvents)
}

// eventData drops the ids.
func eventData(events []sseEvent) []map[string]any {
	var out []map[string]any
	for _, e := range events {
		out = append(out, e.Data)
	}
	return out
}

// The client drops the connection mid-answer and reconnects with
// Last-Event-ID: it reads the rest, with no gap and no repeat.
func TestStreamResumesWithLastEventID(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	api := newAPI(t, h)
	createSeedTask(t, api, seedTask())

	dropped := make(chan struct{})
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		return testmodel.Reply{Chunks: []string{"one ", "two ", "three ", "four"}, BeforeChunk: func(i int) {
			if i == 2 {
				select {
				case <-dropped:
				case <-time.After(30 * time.Second):
				}
			}
		}}
	})
	s := openEvents(t, api.url, "/v1/tasks/support-reply/run", callKey, streamBody)
	id := s.Resp.Header.Get("X-Request-Id")
	var read []sseEvent // the two deltas the model sent, in one event or two
	for textOf(read) != "one two " {
		read = append(read, s.next(20*time.Second))
		require.Equal(t, "text", read[len(read)-1].typ())
	}
	requireIDsFrom(t, 1, read)
	s.Close() // the connection is lost mid-answer
	close(dropped)

	last := read[len(read)-1].ID
	resumed := openEvents(t, api.url, "/v1/runs/"+id+"/events", viewKey, nil, "Last-Event-ID", strconv.FormatInt(last, 10))
	rest := resumed.until("done", 30*time.Second)
	requireIDsFrom(t, last+1, rest)
	require.Equal(t, "three four", textOf(rest))
	whole := openEvents(t, api.url, "/v1/runs/"+id+"/events", viewKey, nil).until("done", 10*time.Second)
	requireTail(t, whole, last, rest)
	requireTail(t, whole, 0, append(read, rest...))
	require.Equal(t, "one two three four", answerText(t, api, id))
	require.Equal(t, 1, h.model.CallCount(), "reconnecting asks the model nothing")

	// Keep-alive comments while nothing happens (the API under test sends
	// them every 15 s, as in production: the stream stays open past one).
	quiet := time.Now()
	eventually(t, time.Minute, "a keep-alive comment", func() bool { return resumed.comments.Load() >= 1 })
	t.Logf("the first keep-alive comment after %s of quiet", time.Since(quiet).Round(time.Millisecond))
	require.Less(t, time.Since(quiet), 29*time.Second, "keep-alives come every 15 s, not every 30")
}

// A model call fails after two deltas and Temporal retries it. The run goes
// on, so no error is sent (the seed's error ends a failed run), and the POST
// stream is not cut off either (docs/streaming.md#a-runs-end: done comes
// last): after the text it carried it goes on with the retried attempt
// whole, from its start, every event marked with attempt 2 (the client drops
// the cut answer's text), and ends with done. GET /events with the cut
// answer's last ID serves the same events.
func TestStreamInterruptedByARetriedModelCall(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	api := newAPI(t, h)
	createSeedTask(t, api, seedTask())

	// The first attempt holds its second delta until the POST's stream has
	// read the first: on a loaded machine the attempt could otherwise be
	// cut before the API began reading, and a reader that begins after an
	// answer was cut short skips it (as documented), so the POST would
	// begin at the retried answer.
	sawFirst := make(chan struct{})
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		if c.Seq == 1 {
			return testmodel.Reply{Chunks: []string{"Pole ", "sana, ", "never sent"}, BreakAfter: 2, BeforeChunk: func(i int) {
				if i == 1 {
					select {
					case <-sawFirst:
					case <-time.After(30 * time.Second): // the test fails below: the POST never read the first delta
					}
				}
			}}
		}
		return testmodel.Reply{Chunks: []string{"Habari, ", "Amina."}}
	})
	s := openEvents(t, api.url, "/v1/tasks/support-reply/run", callKey, streamBody)
	id := s.Resp.Header.Get("X-Request-Id")
	opening := s.next(20 * time.Second)
	require.Equal(t, map[string]any{"type": "text", "text": "Pole "}, opening.Data, "the first delta, alone: the second is still held by the model")
	close(sawFirst)
	events := append([]sseEvent{opening}, s.ended(60*time.Second)...)
	requireIDsFrom(t, 1, events)
	var cut, retried []sseEvent
	for _, e := range events {
		if _, marked := e.Data["attempt"]; marked {
			retried = append(retried, e)
		} else {
			cut = append(cut, e)
		}
	}
	require.Equal(t, events, append(append([]sseEvent{}, cut...), retried...), "the cut answer, then the next: %v", eventData(events))
	require.Equal(t, "Pole sana, ", textOf(cut), "the two deltas sent, once (a fast writer's deltas may share an event)")
	for _, e := range cut {
		require.Equal(t, "text", e.typ(), "no error: %v", eventData(events))
	}
	require.NotEmpty(t, retried)
	require.Equal(t, "Habari, Amina.", textOf(retried), "the retried answer whole")
	for _, e := range retried {
		require.Equal(t, 2.0, e.Data["attempt"], "the new answer's events are marked")
	}
	require.Equal(t, "done", events[len(events)-1].typ(), "done comes last")

	eventually(t, 60*time.Second, "the retried call's answer recorded", func() bool {
		r := api.call("GET", "/v1/runs/"+id, viewKey, nil)
		return r.Status == http.StatusOK && r.data()["outputs"] == 1.0
	})
	require.Equal(t, "Habari, Amina.", answerText(t, api, id), "the recorded answer is the successful attempt's")
	require.Equal(t, 2, h.model.CallCount())

	cutAt := cut[len(cut)-1].ID
	again := openEvents(t, api.url, "/v1/runs/"+id+"/events", viewKey, nil, "Last-Event-ID", strconv.FormatInt(cutAt, 10))
	rest := again.until("done", 10*time.Second)
	requireIDsFrom(t, cutAt+1, rest)
	require.Equal(t, retried, rest, "the reconnect reads what the POST read after the cut")
	// Read from the start, the cut answer is skipped (it is stored with
	// its interruption): the reader gets the answer whole, uncut.
	first := openEvents(t, api.url, "/v1/runs/"+id+"/events", viewKey, nil).until("done", 20*time.Second)
	require.Equal(t, rest, first)
	recordHistory(t, id, "", "streamed-retried-call")
}

// The API and the worker run as separate processes that share only
// Temporal and the broker; a run streams from one to the other.
func TestStreamAcrossProcesses(t *testing.T) {
	h := newHarness(t)
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		return testmodel.Reply{Chunks: []string{"Pole sana, ", "Amina. ", "Your order ", "leaves today."}}
	})
	w := exec.Command(workerBinary(t))
	w.Env = append(h.workerEnv(), broker.EnvURL+"="+natsURL)
	w.Stdout, w.Stderr = os.Stderr, os.Stderr
	require.NoError(t, w.Start())
	t.Cleanup(func() { stopProcess(w) })

	addr := startAPIProcess(t, h, broker.EnvURL+"="+natsURL)
	api := &apiServer{t: t, url: "http://" + addr, openapi: checkedInOpenAPI(t, "http://"+addr)}
	createSeedTask(t, api, seedTask())

	s := openEvents(t, api.url, "/v1/tasks/support-reply/run", callKey, streamBody)
	require.Equal(t, http.StatusOK, s.Resp.StatusCode)
	require.Equal(t, "KE", s.Resp.Header.Get("X-Ai-Processed-In"))
	events := s.until("done", 60*time.Second)
	require.Equal(t, "Pole sana, Amina. Your order leaves today.", textOf(events))
	require.GreaterOrEqual(t, len(events), 2)
	requireIDsFrom(t, 1, events)
}

// startAPIProcess runs bin/api against the shared Temporal for h's worker
// queue, with the test's keys, and returns its address.
func startAPIProcess(t *testing.T, h *harness, env ...string) string {
	t.Helper()
	addr := freeAddr(t)
	proc := exec.Command(apiBinary(t))
	proc.Env = append(append(os.Environ(), "TEMPORAL_ADDRESS="+temporalAddr, "TEMPORAL_NAMESPACE="+temporalNS,
		"AGENT_API_ADDR="+addr, "AGENT_API_TASK_QUEUE="+h.queue+"-api", worker.EnvTaskQueue+"="+h.queue,
		tasksapi.EnvStorePrefix+"=it/"+h.queue+"/", // a project of its own: another test's entities are on other queues
		"DEVELOPER_KEYS="+devKey, "API_KEYS="+callKey+"=call,"+viewKey+"=view", "AGENT_API_PROCESSED_IN=KE"), env...)
	proc.Stdout, proc.Stderr = os.Stderr, os.Stderr
	require.NoError(t, proc.Start())
	t.Cleanup(func() { stopProcess(proc) })
	waitListening(t, addr)
	return addr
}

// apiBinary is bin/api (AGENT_API_BIN), or built once per test run.
func apiBinary(t *testing.T) string {
	t.Helper()
	apiBinOnce.Do(func() {
		if apiBin = os.Getenv("AGENT_API_BIN"); apiBin == "" {
			apiBin = filepath.Join(workDir, "api")
			apiBinErr = goBuild(apiBin, "./cmd/api")
		}
	})
	require.NoError(t, apiBinErr)
	return apiBin
}

// freeAddr is a loopback address nothing listens on (yet).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

// A worker without a broker still answers a streamed run: 3 s after the
// answer came through Temporal, the API sends the text and done itself.
func TestStreamedRunWhoseWorkerHasNoBroker(t *testing.T) {
	h := newHarness(t)
	cfg := h.workerConfig()
	cfg.BrokerURL = ""
	startWorkerWith(t, cfg)
	api := newAPI(t, h)
	createSeedTask(t, api, seedTask())
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply { return testmodel.Reply{Text: "Pole sana, Amina."} })

	s := openEvents(t, api.url, "/v1/tasks/support-reply/run", callKey, streamBody)
	events := s.ended(30 * time.Second)
	require.Len(t, events, 2, "%v", eventData(events))
	requireIDsFrom(t, 1, events)
	require.Equal(t, map[string]any{"type": "text", "text": "Pole sana, Amina."}, events[0].Data)
	require.Equal(t, "done", events[1].typ())
	require.False(t, h.model.Calls()[0].Stream, "the worker did not stream: it has no broker")
}

// waitListening waits until an api process at addr serves its description.
func waitListening(t *testing.T, addr string) {
	t.Helper()
	eventually(t, 30*time.Second, "the api listening", func() bool {
		resp, err := http.Get("http://" + addr + "/openapi.json")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}
