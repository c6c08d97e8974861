package integration

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/tasksapi"
	"github.com/agenttask/agenttask/internal/testmodel"
	"github.com/agenttask/agenttask/starter"
)

// The chat page (/ui, internal/chatui) in headless Chromium, against the
// Tasks API over real HTTP, its worker and the test model.

// chatKey may view and call, as a person using the page needs.
const chatKey = "chat-key-1"

func withChatKey(c *tasksapi.Config) {
	keys, err := tasksapi.ParseKeys(callKey+"=call,"+viewKey+"=view,"+chatKey+"=call+view", devKey)
	if err != nil {
		panic(err)
	}
	c.Keys = keys
}

// chatEval evaluates js in the tab.
func chatEval[T any](t *testing.T, tab context.Context, js string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	require.NoError(t, err, "evaluating %s", js)
	return v
}

// chatDo runs actions in the tab.
func chatDo(t *testing.T, tab context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, 30*time.Second)
	defer cancel()
	require.NoError(t, chromedp.Do(ctx, actions...), what)
}

// chatWait polls js (an expression giving a string) until cond holds of
// it, and returns it; it fails with the page's text after timeout.
func chatWait(t *testing.T, tab context.Context, what, js string, timeout time.Duration, cond func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		v := chatEval[string](t, tab, js)
		if cond(v) {
			return v
		}
		if time.Now().After(deadline) {
			page := chatEval[string](t, tab, `document.body.innerText`)
			t.Fatalf("the chat page did not show %s within %s (last %q); page:\n%s", what, timeout, v, page)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// chatScreenshot keeps the page as name, in the test's folder and in
// $AGENT_SCREENSHOTS when set.
func chatScreenshot(t *testing.T, tab context.Context, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	require.NotEmpty(t, png)
	dirs := []string{t.TempDir()}
	if d := os.Getenv("AGENT_SCREENSHOTS"); d != "" {
		dirs = append(dirs, d)
	}
	for _, d := range dirs {
		require.NoError(t, os.MkdirAll(d, 0o755))
		p := filepath.Join(d, name)
		require.NoError(t, os.WriteFile(p, png, 0o644))
		t.Logf("screenshot %s", p)
	}
}

// newRunID is an ID of the form the Tasks API serves (run- and 26 base32).
func newRunID(t *testing.T) string {
	t.Helper()
	b := make([]byte, 16)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return "run-" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b))
}

type chatEntry struct {
	Class string   `json:"class"`
	Title string   `json:"title"`
	Text  string   `json:"text"`
	Times []string `json:"times"` // datetime|shown text
}

const chatEntriesJS = `JSON.stringify(Array.from(document.querySelectorAll("#messages article")).map(a => ({
	class: a.className, title: a.title, text: a.querySelector(".text").textContent,
	times: Array.from(a.querySelectorAll("time")).map(t => t.dateTime + "|" + t.textContent)})))`

// A person opens /ui, enters a key, picks the task and sends two
// messages: each answer is read from the page twice while the model still
// holds the rest of it (the text grows before the turn ends), then whole.
// Both turns are listed with their received_at and committed_at, the
// API's own, shown on hover (title) and as <time> text. A run with an
// approval-needing capability, opened by its ID, shows the pending call;
// Approve on the page decides it (by is the page's key), and the answer
// that follows is listed.
func TestChatPageStreamsTwoTurnsAndDecidesAnApproval(t *testing.T) {
	tab := webUIBrowser(t)
	h := newHarness(t)
	h.startWorker()
	payments := startRefundsWorker(t)
	api := newAPI(t, h, withChatKey)
	// Before the API closes (cleanups run last first): the browser goes,
	// ending the page's open event stream, which the server would wait for.
	t.Cleanup(func() { _ = chromedp.Cancel(tab) })
	createSeedTask(t, api, seedTask())

	// The model writes each chat answer a piece at a time: piece i > 0
	// waits for the test's release, so the test reads the page while the
	// answer is unfinished. A conversation about refunds is the sample's.
	release := make(chan struct{}, 16)
	answers := map[string][]string{
		"My order is late.":    {"Pole sana, ", "Amina. ", "It left ", "the depot today."},
		"When will it arrive?": {"It should ", "arrive ", "tomorrow ", "by noon."},
	}
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		for _, m := range c.Messages {
			if m.Role == "user" && strings.HasPrefix(m.Content, "refund ") {
				return refundModel(c)
			}
		}
		chunks, ok := answers[c.Messages[len(c.Messages)-1].Content]
		if !ok {
			return testmodel.Reply{Text: "unexpected: " + c.Messages[len(c.Messages)-1].Content}
		}
		return testmodel.Reply{Chunks: chunks, BeforeChunk: func(i int) {
			if i == 0 {
				return
			}
			select {
			case <-release:
			case <-time.After(30 * time.Second): // the test fails: it never read the page mid-answer
			}
		}}
	})

	webUIOpen(t, tab, api.url+"/ui")
	require.Equal(t, api.url+"/ui/", chatEval[string](t, tab, `location.href`))
	chatDo(t, tab, "entering the key",
		chromedp.SendKeys(chromedp.CSS("#key"), chatKey), chromedp.Click(chromedp.CSS("#use-key")))
	chatWait(t, tab, "the task list", `Array.from(document.querySelectorAll("#task option")).map(o => o.value).join(",")`, 20*time.Second,
		func(s string) bool { return strings.Contains(s, "support-reply") })
	require.Equal(t, chatKey, chatEval[string](t, tab, `sessionStorage.getItem("agenttask.chat.key")`), "the key is kept in the tab's session")
	chatEval[bool](t, tab, `(() => { const s = document.getElementById("task"); s.value = "support-reply"; s.dispatchEvent(new Event("change")); return true; })()`)
	chatDo(t, tab, "filling the customer variable", chromedp.SendKeys(chromedp.CSS("#var-customer"), "Amina"))

	const streamJS = `document.getElementById("streaming").hidden ? "" : document.getElementById("stream-text").textContent`
	const listedJS = `String(document.querySelectorAll("#messages article").length)`
	const answersJS = `String(document.querySelectorAll("#messages article.output").length)`
	// sendAndWatch sends text, reads the growing answer twice while the
	// model holds the rest, then lets it finish and waits for the turn's
	// two entries.
	sendAndWatch := func(text string, entries int) {
		chunks := answers[text]
		chatDo(t, tab, "sending "+text,
			chromedp.SendKeys(chromedp.CSS("#message"), text), chromedp.Click(chromedp.CSS("#send")))
		first := chatWait(t, tab, "the answer's first piece", streamJS, 30*time.Second, func(s string) bool { return s != "" })
		require.Equal(t, chunks[0], first, "the first piece alone: the model holds the second")
		require.Equal(t, fmt.Sprint(entries/2-1), chatEval[string](t, tab, answersJS), "the turn has not ended: its answer is not listed")
		release <- struct{}{}
		second := chatWait(t, tab, "the answer grown", streamJS, 30*time.Second, func(s string) bool { return s != first })
		require.Equal(t, chunks[0]+chunks[1], second, "the answer grew by the second piece, still streaming")
		require.Equal(t, fmt.Sprint(entries/2-1), chatEval[string](t, tab, answersJS), "still streaming: the answer is not listed yet")
		for range chunks[2:] {
			release <- struct{}{}
		}
		chatWait(t, tab, fmt.Sprintf("%d entries", entries), listedJS, 30*time.Second, func(s string) bool { return s == fmt.Sprint(entries) })
		chatWait(t, tab, "the streaming entry gone", streamJS, 10*time.Second, func(s string) bool { return s == "" })
	}
	sendAndWatch("My order is late.", 2)
	runID := chatEval[string](t, tab, `document.getElementById("run-label").textContent`)
	require.Regexp(t, `^run-[a-z2-7]{26}$`, runID)
	sendAndWatch("When will it arrive?", 4)

	// Both turns, with the API's instants, on hover and as text.
	r := api.call("GET", "/v1/runs/"+runID+"/messages", viewKey, nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	var msgs []contract.Message
	raw, _ := json.Marshal(r.JSON["data"])
	require.NoError(t, json.Unmarshal(raw, &msgs))
	require.Len(t, msgs, 4)
	var shown []chatEntry
	require.NoError(t, json.Unmarshal([]byte(chatEval[string](t, tab, chatEntriesJS)), &shown))
	require.Len(t, shown, 4)
	wantText := []string{"My order is late.", strings.Join(answers["My order is late."], ""),
		"When will it arrive?", strings.Join(answers["When will it arrive?"], "")}
	for i, m := range msgs {
		e := shown[i]
		require.Equal(t, "entry "+m.Type, e.Class, "entry %d", i)
		require.Equal(t, wantText[i], e.Text, "entry %d", i)
		require.NotEmpty(t, m.CommittedAt, "entry %d", i)
		var title []string
		var times []string
		if m.ReceivedAt != "" {
			title = append(title, "received_at "+m.ReceivedAt)
			times = append(times, m.ReceivedAt)
		}
		title = append(title, "committed_at "+m.CommittedAt)
		times = append(times, m.CommittedAt)
		require.Equal(t, strings.Join(title, "\n"), e.Title, "entry %d: the instants on hover", i)
		require.Len(t, e.Times, len(times), "entry %d: %v", i, e.Times)
		for j, ts := range times {
			dt, label, _ := strings.Cut(e.Times[j], "|")
			require.Equal(t, ts, dt, "entry %d", i)
			require.Regexp(t, `^(received at|committed at) \S`, label, "entry %d: shown as text", i)
		}
		if m.Type == "input" {
			require.NotEmpty(t, m.ReceivedAt, "an input has its receipt")
		}
	}
	chatScreenshot(t, tab, "chat-page.png")

	// A run whose agent has an approval-needing capability. Tasks of this
	// API name no capabilities, so a service starts it with the Go client,
	// marked as a run of the API's task (memo api_task, docs/ui.md); the
	// API serves it like its own.
	approvalRun := newRunID(t)
	var spec contract.AgentSpec
	raw, _ = json.Marshal(refundAgent(payments, map[string]any{"approval": "always"}))
	require.NoError(t, json.Unmarshal(raw, &spec))
	_, err := starter.New(sdk, h.queue).Start(ctxT(t, 10*time.Second),
		contract.StartArgs{Agent: spec, Input: &contract.TaskIO{Message: contract.TextParts("refund o-7 120")}},
		starter.StartOptions{TaskID: approvalRun, Memo: map[string]any{"api_task": "support-reply"}})
	require.NoError(t, err)

	chatDo(t, tab, "opening the run by its ID",
		chromedp.Click(chromedp.CSS("#new-chat")),
		chromedp.SendKeys(chromedp.CSS("#run-id"), approvalRun), chromedp.Click(chromedp.CSS("#open-run")))
	chatWait(t, tab, "the pending approval", `document.getElementById("approvals").hidden ? "" : document.getElementById("approval-list").innerText`, 60*time.Second,
		func(s string) bool { return strings.Contains(s, "refund") && strings.Contains(s, `"order_id": "o-7"`) })
	require.Contains(t, chatEval[string](t, tab, `document.getElementById("run-state").textContent`), "awaiting_approval")
	// The run's events (events=all) show the tool call it asked for, and
	// that it waits for a decision.
	chatWait(t, tab, "the tool call and its wait shown", `document.getElementById("activity").hidden ? "" : document.getElementById("activity-list").innerText`, 60*time.Second,
		func(s string) bool {
			return strings.Contains(s, `calling refund {"order_id":"o-7","amount":120}`) && strings.Contains(s, "refund waits for your decision")
		})
	chatScreenshot(t, tab, "chat-page-approval.png")
	chatDo(t, tab, "approving", chromedp.Click(chromedp.CSS("#approval-list button.approve")))
	chatWait(t, tab, "the answer after the approved call", `document.getElementById("messages").innerText`, 60*time.Second,
		func(s string) bool {
			return strings.Contains(s, `"status":"issued"`) && strings.Contains(s, `"order_id":"o-7"`)
		})
	require.True(t, chatEval[bool](t, tab, `document.getElementById("approvals").hidden`), "nothing pending is shown")
	chatWait(t, tab, "the decision and the call's result shown", `document.getElementById("activity-list").innerText`, 60*time.Second,
		func(s string) bool {
			return strings.Contains(s, "refund approved") && strings.Contains(s, `refund → {"refund_id":`) && strings.Contains(s, `"order_id":"o-7"`)
		})
	chatScreenshot(t, tab, "chat-page-tool-call.png")

	r = api.call("GET", "/v1/runs/"+approvalRun+"/approvals", viewKey, nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	list := r.JSON["data"].([]any)
	require.Len(t, list, 1)
	d := list[0].(map[string]any)["decision"].(map[string]any)
	require.Equal(t, true, d["approve"])
	require.Equal(t, tasksapi.KeyID(chatKey), d["by"], "decided by the page's key")
}

// The page is served without a key, under a policy that lets it load and
// call only its own origin; the API's routes still need one.
func TestChatPageServedWithoutAKeyAndTheAPIStillNeedsOne(t *testing.T) {
	h := newHarness(t)
	api := newAPI(t, h)
	for _, path := range []string{"/ui/", "/ui/app.js", "/ui/app.css"} {
		resp, err := http.Get(api.url + path)
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		require.Contains(t, resp.Header.Get("Content-Security-Policy"), "connect-src 'self'", path)
		require.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"), "%s: no CORS: the page calls its own origin", path)
	}
	r := api.call("GET", "/v1/tasks", "", nil)
	requireProblem(t, r, http.StatusUnauthorized, tasksapi.CodeUnauthorized, "")
}

// A person sends a message while a turn runs, then another: both are queued
// behind the running turn (docs/contract.md#the-order-of-messages: not
// committed, listed after it), and the running turn's answer is committed in
// front of them. The page pages by the API's cursor over committed entries
// only and re-reads the uncommitted tail on every poll, so once the turns
// end it lists every message exactly once and every answer, in the API's
// order, and marks each answer with the inputs it answers, found by
// committed_at (one answer for the two queued messages).
func TestChatPageSendDuringARunningTurnShowsEachMessageOnceAndEveryAnswer(t *testing.T) {
	tab := webUIBrowser(t)
	h := newHarness(t)
	h.startWorker()
	api := newAPI(t, h, withChatKey)
	t.Cleanup(func() { _ = chromedp.Cancel(tab) })
	createSeedTask(t, api, seedTask())

	const (
		first   = "My order is late."
		during  = "Where is it now?"  // its turn is held mid-answer
		queued1 = "Can I collect it?" // sent while that turn runs
		queued2 = "I am free after 5."
	)
	answers := map[string][]string{
		first:   {"It left ", "the depot today."},
		during:  {"It is ", "in Nairobi."},
		queued2: {"Yes, ", "the Westlands shop ", "is open until 8."},
	}
	held := make(chan struct{})
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		last := c.Messages[len(c.Messages)-1].Content
		for text, chunks := range answers {
			if !strings.Contains(last, text) {
				continue
			}
			r := testmodel.Reply{Chunks: chunks}
			if text == during {
				r.BeforeChunk = func(i int) {
					if i == 1 {
						select {
						case <-held:
						case <-time.After(90 * time.Second): // the test has failed
						}
					}
				}
			}
			return r
		}
		return testmodel.Reply{Text: "unexpected: " + last}
	})

	webUIOpen(t, tab, api.url+"/ui")
	chatDo(t, tab, "entering the key",
		chromedp.SendKeys(chromedp.CSS("#key"), chatKey), chromedp.Click(chromedp.CSS("#use-key")))
	chatWait(t, tab, "the task list", `Array.from(document.querySelectorAll("#task option")).map(o => o.value).join(",")`, 20*time.Second,
		func(s string) bool { return strings.Contains(s, "support-reply") })
	chatEval[bool](t, tab, `(() => { const s = document.getElementById("task"); s.value = "support-reply"; s.dispatchEvent(new Event("change")); return true; })()`)
	chatDo(t, tab, "filling the customer variable", chromedp.SendKeys(chromedp.CSS("#var-customer"), "Amina"))

	const streamJS = `document.getElementById("streaming").hidden ? "" : document.getElementById("stream-text").textContent`
	const listedJS = `JSON.stringify(Array.from(document.querySelectorAll("#messages article .text")).map(e => e.textContent))`
	const pendingJS = `document.getElementById("pending").innerText`
	send := func(text string) {
		chatWait(t, tab, "Send enabled", `String(!document.getElementById("send").disabled)`, 30*time.Second, func(s string) bool { return s == "true" })
		chatDo(t, tab, "sending "+text, chromedp.SendKeys(chromedp.CSS("#message"), text), chromedp.Click(chromedp.CSS("#send")))
	}
	// runMessages is the API's list, as a viewer reads it.
	runMessages := func(run string) []contract.Message {
		r := api.call("GET", "/v1/runs/"+run+"/messages", viewKey, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		var ms []contract.Message
		raw, _ := json.Marshal(r.JSON["data"])
		require.NoError(t, json.Unmarshal(raw, &ms))
		return ms
	}

	// Turn 1, answered whole.
	send(first)
	chatWait(t, tab, "the first turn listed", listedJS, 30*time.Second, func(s string) bool {
		return s == mustJSON(t, []string{first, strings.Join(answers[first], "")})
	})
	runID := chatEval[string](t, tab, `document.getElementById("run-label").textContent`)
	require.Regexp(t, `^run-[a-z2-7]{26}$`, runID)

	// Turn 2 runs: the model has written its first piece and holds the rest.
	send(during)
	chatWait(t, tab, "turn 2's first piece", streamJS, 30*time.Second, func(s string) bool { return s == answers[during][0] })
	// Two messages sent while it runs: the API lists them uncommitted,
	// after the running turn's input.
	send(queued1)
	send(queued2)
	deadline := time.Now().Add(30 * time.Second)
	for {
		ms := runMessages(runID)
		if n := len(ms); n == 5 && ms[3].CommittedAt == "" && ms[4].CommittedAt == "" {
			break
		}
		require.True(t, time.Now().Before(deadline), "the API never listed the two queued messages: %+v", ms)
		time.Sleep(100 * time.Millisecond)
	}
	// Let the page poll (every 1.5 s) at least twice while they are queued.
	time.Sleep(3500 * time.Millisecond)
	midListed := chatEval[string](t, tab, listedJS)
	midPending := chatEval[string](t, tab, pendingJS)
	require.Equal(t, answers[during][0], chatEval[string](t, tab, streamJS), "turn 2 is still held")
	chatScreenshot(t, tab, "chat-page-queued.png")

	// Turn 2 ends; turn 3 answers both queued messages at once.
	close(held)
	want := []string{first, strings.Join(answers[first], ""), during, strings.Join(answers[during], ""),
		queued1, queued2, strings.Join(answers[queued2], "")}
	var ms []contract.Message
	deadline = time.Now().Add(60 * time.Second)
	for {
		ms = runMessages(runID)
		if len(ms) == len(want) && ms[len(ms)-1].CommittedAt != "" {
			break
		}
		require.True(t, time.Now().Before(deadline), "the run never answered the queued messages: %+v", ms)
		time.Sleep(100 * time.Millisecond)
	}
	require.Equal(t, want, texts(ms), "the API's list, in commit order")
	chatWait(t, tab, "the last answer listed", `document.getElementById("messages").innerText`, 30*time.Second,
		func(s string) bool { return strings.Contains(s, want[len(want)-1]) })
	time.Sleep(3500 * time.Millisecond) // two more polls: nothing else may be listed

	// Every message once, every answer, in the API's order, with the API's instants.
	var shown []chatEntry
	require.NoError(t, json.Unmarshal([]byte(chatEval[string](t, tab, chatEntriesJS)), &shown))
	var got []string
	for _, e := range shown {
		got = append(got, e.Text)
	}
	require.Equal(t, want, got, "the page lists each message once and every answer (page:\n%s)", chatEval[string](t, tab, `document.body.innerText`))
	for i, m := range ms {
		require.Equal(t, "entry "+m.Type, shown[i].Class, "entry %d", i)
		title := "committed_at " + m.CommittedAt
		if m.ReceivedAt != "" {
			title = "received_at " + m.ReceivedAt + "\n" + title
		}
		require.Equal(t, title, shown[i].Title, "entry %d: the API's instants", i)
	}
	require.Empty(t, strings.TrimSpace(chatEval[string](t, tab, pendingJS)), "nothing is left queued")

	// While turn 2 ran, the queued messages were shown as queued (not
	// committed, with their received_at), not as entries of the conversation.
	require.Equal(t, mustJSON(t, []string{first, strings.Join(answers[first], ""), during}), midListed,
		"during turn 2 the conversation held its committed entries only")
	require.Contains(t, midPending, queued1)
	require.Contains(t, midPending, queued2)
	require.Equal(t, 2, strings.Count(midPending, "not committed yet"), "both shown as queued: %q", midPending)

	// Each answer names the inputs it answers, by committed_at: the last
	// one answers both queued messages.
	answered := chatEval[string](t, tab, `JSON.stringify(Array.from(document.querySelectorAll("#messages article.output")).map(a => a.dataset.answers))`)
	require.Equal(t, mustJSON(t, []string{ms[0].ReceivedAt, ms[2].ReceivedAt, ms[4].ReceivedAt + " " + ms[5].ReceivedAt}), answered)
	chatScreenshot(t, tab, "chat-page-answered.png")
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}
