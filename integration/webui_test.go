package integration

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/codec"
	"github.com/agenttask/agenttask/internal/llm"
	"github.com/agenttask/agenttask/starter"
)

// The Web UI tests drive the Temporal Web UI that agentdev embeds
// (ui-server) in Debian's headless Chromium through the DevTools protocol
// (chromedp), each on an agentdev process of its own with the UI on.

// webUIBrowser starts a headless Chromium for this test and returns its tab.
// A machine without Debian's chromium on PATH fails the test: it is a
// dependency of make test, not optional.
func webUIBrowser(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("the Web UI tests need Debian's headless Chromium on PATH: install it with `apt-get install -y chromium` (%v)", err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // as root (CI) Chromium refuses to start sandboxed
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1600, 1200),
		chromedp.UserDataDir(t.TempDir()),
	)
	actx, stopBrowser := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(stopBrowser)
	ctx, closeTab := chromedp.NewContext(actx)
	t.Cleanup(closeTab)
	// The first action starts the browser, which lives as long as the
	// context of that call: no timeout on it.
	require.NoError(t, chromedp.Do(ctx), "starting %s", path)
	// The page's errors, printed when the test fails.
	var (
		mu         sync.Mutex
		pageErrors []string
	)
	require.NoError(t, chromedp.Listen(ctx, func(ev any) {
		var line string
		switch e := ev.(type) {
		case *runtime.EventExceptionThrown:
			line = "exception: " + e.ExceptionDetails.Text
			if e.ExceptionDetails.Exception != nil {
				line += " " + e.ExceptionDetails.Exception.Description
			}
		case *runtime.EventConsoleAPICalled:
			if e.Type != runtime.ConsoleAPICalledTypeError {
				return
			}
			line = "console.error:"
			for _, a := range e.Args {
				line += " " + string(a.Value) + a.Description
			}
		default:
			return
		}
		mu.Lock()
		pageErrors = append(pageErrors, line)
		mu.Unlock()
	}))
	t.Cleanup(func() {
		if t.Failed() {
			mu.Lock()
			defer mu.Unlock()
			t.Logf("the page's errors:\n%s", strings.Join(pageErrors, "\n"))
		}
	})
	return ctx
}

// webUIPageText is the page's visible text (innerText of the body and of its
// same-origin frames) and its address.
func webUIPageText(ctx context.Context) (text, location string, err error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	type shown struct {
		Text     string `json:"text"`
		Location string `json:"location"`
	}
	out, err := chromedp.Run(ctx, chromedp.Evaluate[shown](`(() => {
		let text = document.body ? document.body.innerText : "";
		for (const f of document.querySelectorAll("iframe")) {
			try { text += "\n" + f.contentDocument.body.innerText; } catch (e) {}
		}
		return {text, location: location.href};
	})()`))
	return out.Text, out.Location, err
}

// webUIOpen navigates the tab to u.
func webUIOpen(t *testing.T, ctx context.Context, u string) {
	t.Helper()
	nctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	require.NoError(t, chromedp.Do(nctx, chromedp.Navigate(u), chromedp.WaitReady("body")), "opening %s", u)
}

// webUIWaitText opens u and waits until the page shows every one of wants,
// opening u again every reload when reload > 0 (a list the UI loaded before
// the server listed the task does not refresh by itself); it fails with the
// page's text when the wait runs out.
func webUIWaitText(t *testing.T, ctx context.Context, u string, reload, timeout time.Duration, wants ...string) string {
	t.Helper()
	webUIOpen(t, ctx, u)
	deadline := time.Now().Add(timeout)
	lastLoad := time.Now()
	var text, location string
	var err error
	for {
		text, location, err = webUIPageText(ctx)
		if err == nil {
			missing := false
			for _, w := range wants {
				if !strings.Contains(text, w) {
					missing = true
					break
				}
			}
			if !missing {
				return text
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Web UI at %s did not show %q within %s (error %v); page text:\n%s", location, wants, timeout, err, text)
		}
		if reload > 0 && time.Since(lastLoad) > reload {
			webUIOpen(t, ctx, u)
			lastLoad = time.Now()
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// TestWebUIListsTasksByAgentState runs a task that waits for a person's
// approval, and one that does not, on an agentdev server with its Web UI
// on: the UI's workflow list filtered by AgentState = "awaiting_approval"
// lists the first and not the second; the first's event history shows its
// model turn's summary, and its User Metadata tab its current details,
// rendered from Markdown (state, model, the pending call).
func TestWebUIListsTasksByAgentState(t *testing.T) {
	began := time.Now()
	tab := webUIBrowser(t)
	srv, f, err := runAgentdevServer("--port", "0", "--ui-port", "0", "--nats-port", "-1", "--log-level", "error")
	require.NoError(t, err)
	t.Cleanup(func() { stopProcess(srv) })
	addr, ui := f[1], f[2]
	require.NotEqual(t, "-", ui, "agentdev server printed no Web UI address")
	c, err := client.Dial(client.Options{HostPort: addr, Namespace: temporalNS, Logger: quietLogger()})
	require.NoError(t, err)
	t.Cleanup(c.Close)

	// A worker and the refunds sample's activity worker on this server.
	h := newHarness(t)
	h.model.SetHandler(refundModel)
	cfg := h.workerConfig()
	cfg.BrokerURL = "" // this server runs no broker
	h.runWorkerOn(c, temporalNS, cfg)
	payments := startRefundsWorkerOn(t, c)

	// Both tasks are started by the Go client, which sets AgentState.
	var spec, plainSpec contract.AgentSpec
	raw, _ := json.Marshal(refundAgent(payments, map[string]any{"approvalCondition": "args.amount > 100"}))
	require.NoError(t, json.Unmarshal(raw, &spec))
	raw, _ = json.Marshal(refundAgent(payments, nil))
	require.NoError(t, json.Unmarshal(raw, &plainSpec))
	suffix := base64.RawURLEncoding.EncodeToString(randomKey(t)[:6])
	waiting, active := "webui-waiting-"+suffix, "webui-active-"+suffix
	tasks := starter.New(c, h.queue).CheckMounts(h.mounts)
	_, err = tasks.Start(ctxT(t, 10*time.Second), contract.StartArgs{Agent: spec, Input: &contract.TaskIO{Message: contract.TextParts("refund o-1 500")}},
		starter.StartOptions{TaskID: waiting})
	require.NoError(t, err)
	_, err = tasks.Start(ctxT(t, 10*time.Second), contract.StartArgs{Agent: plainSpec, Input: &contract.TaskIO{Message: contract.TextParts("hello")}},
		starter.StartOptions{TaskID: active})
	require.NoError(t, err)
	statusOf := func(id string) (contract.Status, bool) {
		var st contract.Status
		v, err := c.QueryWorkflow(ctxT(t, 10*time.Second), id, "", "status")
		return st, err == nil && v.Get(&st) == nil
	}
	eventually(t, time.Minute, "the pending approval", func() bool {
		st, ok := statusOf(waiting)
		return ok && st.Approvals == 1 && st.State == contract.StateAwaitingApproval
	})
	eventually(t, time.Minute, "the other task's answer", func() bool {
		st, ok := statusOf(active)
		return ok && st.Outputs == 1
	})
	t.Logf("task %s awaits approval after %s", waiting, time.Since(began).Round(time.Millisecond))

	// The server's visibility lists it (a moment after the upsert), so the
	// UI's first load of the list should too.
	eventually(t, 90*time.Second, "the task listed by AgentState", func() bool {
		res, err := c.ListWorkflow(ctxT(t, 5*time.Second), &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: temporalNS, Query: `AgentState = "awaiting_approval"`,
		})
		return err == nil && len(res.GetExecutions()) == 1 && res.GetExecutions()[0].GetExecution().GetWorkflowId() == waiting
	})

	// The list, as an operator types the query (the UI keeps it in ?query=).
	list := ui + "/namespaces/" + temporalNS + "/workflows?query=" + url.QueryEscape(`AgentState="awaiting_approval"`)
	text := webUIWaitText(t, tab, list, 10*time.Second, 90*time.Second, waiting)
	require.Contains(t, text, `AgentState = "awaiting_approval"`, "the list's filter")
	require.NotContains(t, text, active, "a task that waits for nobody is listed")
	t.Logf("listed by AgentState after %s", time.Since(began).Round(time.Millisecond))

	desc, err := c.DescribeWorkflowExecution(ctxT(t, 10*time.Second), waiting, "")
	require.NoError(t, err)
	run := ui + "/namespaces/" + temporalNS + "/workflows/" + url.PathEscape(waiting) + "/" + desc.GetWorkflowExecutionInfo().GetExecution().GetRunId()
	// Activity summaries: the Event History shows each scheduled
	// activity's user metadata summary.
	webUIWaitText(t, tab, run+"/history", 0, 90*time.Second, "ModelTurn", "model test/echo · turn 1")
	t.Logf("activity summary after %s", time.Since(began).Round(time.Millisecond))
	// Current details (the __temporal_workflow_metadata query, answered by
	// the worker): Markdown, so "**t1.c1**" shows as bold t1.c1.
	text = webUIWaitText(t, tab, run+"/user-metadata", 0, 90*time.Second,
		"Current Details", "awaiting_approval · agent a · model test/echo", "awaiting approval t1.c1 · refund", "last input: refund o-1 500")
	require.NotContains(t, text, "**", "current details shown as Markdown source, not rendered")
	t.Logf("current details after %s", time.Since(began).Round(time.Millisecond))

	// Static details: what the task runs, set by the Go client at start
	// (starter.Details), in the panel's Details section.
	require.Contains(t, text, "agent a · model test/echo · mode conversation")
	require.Contains(t, text, "instructions Answer briefly.")
	require.Contains(t, text, "capabilities refund (activity IssueRefund)")
	// The idle timer of the task that waits for input is named, not a bare
	// duration.
	desc, err = c.DescribeWorkflowExecution(ctxT(t, 10*time.Second), active, "")
	require.NoError(t, err)
	activeRun := ui + "/namespaces/" + temporalNS + "/workflows/" + url.PathEscape(active) + "/" + desc.GetWorkflowExecutionInfo().GetExecution().GetRunId()
	webUIWaitText(t, tab, activeRun+"/history", 0, 90*time.Second, "Timer Started", "idle timeout 24h")
	t.Logf("timer summary after %s", time.Since(began).Round(time.Millisecond))
	shot(t, tab, "webui-task.png")
}

// TestWebUIDecodesThroughTheCodecServer runs `agentdev run` with
// AGENT_CODEC_KEYS set and a task whose input is a unique text: the history
// read without the codec holds it only encrypted, and the Web UI's page of
// the task shows it decoded, through the Tasks API's /codec/decode.
func TestWebUIDecodesThroughTheCodecServer(t *testing.T) {
	began := time.Now()
	tab := webUIBrowser(t)
	h := newHarness(t)
	apiAddr := freeAddr(t)
	_, uiPort, err := net.SplitHostPort(freeAddr(t))
	require.NoError(t, err)
	key := randomKey(t)
	cmd := exec.Command(agentdevBinary(t), "run", "--data", t.TempDir(), "--port", "0", "--ui-port", uiPort, "--nats-port", "-1", "--demo=false")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OPENAI_") && !strings.HasPrefix(kv, "AGENT_") && !strings.HasPrefix(kv, "API_KEYS=") && !strings.HasPrefix(kv, "DEVELOPER_KEYS=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, codec.EnvKeys+"=web:"+base64.StdEncoding.EncodeToString(key), "AGENT_API_ADDR="+apiAddr,
		"AGENT_LOG_LEVEL=warn", llm.EnvModelProviders+`={"test":{"baseURL":"`+h.model.URL+`"}}`)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { stopProcess(cmd) })
	var (
		mu      sync.Mutex
		printed strings.Builder
	)
	frontend, queue := make(chan string, 1), make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			mu.Lock()
			printed.WriteString(line + "\n")
			mu.Unlock()
			f := strings.Fields(line)
			switch {
			case len(f) >= 3 && f[0] == "Temporal" && f[1] == "frontend:":
				frontend <- f[2]
			case len(f) >= 4 && f[0] == "Worker:" && f[1] == "task" && f[2] == "queue":
				q, _ := strconv.Unquote(strings.TrimSuffix(f[3], ","))
				queue <- q
			}
		}
	}()
	var addr, q string
	for addr == "" || q == "" {
		select {
		case addr = <-frontend:
		case q = <-queue:
		case <-time.After(2 * time.Minute):
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("agentdev run printed no frontend and worker queue within 2 minutes:\n%s", printed.String())
		}
	}

	kc, err := codec.New(codec.Keys{"web": key}, "web")
	require.NoError(t, err)
	o := client.Options{HostPort: addr, Namespace: temporalNS, Logger: quietLogger()}
	kc.Apply(&o)
	enc, err := client.Dial(o)
	require.NoError(t, err)
	t.Cleanup(enc.Close)
	plain, err := client.Dial(client.Options{HostPort: addr, Namespace: temporalNS, Logger: quietLogger()})
	require.NoError(t, err)
	t.Cleanup(plain.Close)

	secret := "okapi-lantern-" + base64.RawURLEncoding.EncodeToString(randomKey(t)[:9])
	id := "webui-codec-" + base64.RawURLEncoding.EncodeToString(randomKey(t)[:6])
	var spec contract.AgentSpec
	raw, _ := json.Marshal(agent("codec-ui"))
	require.NoError(t, json.Unmarshal(raw, &spec))
	_, err = starter.New(enc, q).WithDataConverter(kc.DataConverter()).Start(ctxT(t, 10*time.Second),
		contract.StartArgs{Agent: spec, Input: &contract.TaskIO{Message: contract.TextParts(secret)}}, starter.StartOptions{TaskID: id})
	require.NoError(t, err)
	waitOutputsWith(t, enc, id, 1)

	// Read without the codec, the history holds the text nowhere in the
	// clear; its start argument is encrypted.
	events := historyWith(t, plain, id, "")
	ids := payloadKeyIDs(t, events, secret)
	require.Greater(t, ids["web"], 3)
	started := events[0].GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads()[0]
	require.Equal(t, "binary/encrypted", string(started.Metadata["encoding"]))
	t.Logf("task %s answered after %s", id, time.Since(began).Round(time.Millisecond))

	// The page, in a browser that records its calls to the codec server.
	decodeURL := "http://" + apiAddr + "/codec/decode"
	var (
		mu2     sync.Mutex
		posts   = map[network.RequestID]bool{}
		decodes []int64 // the answers to the page's POSTs to decodeURL
	)
	require.NoError(t, chromedp.Listen(tab, func(ev any) {
		mu2.Lock()
		defer mu2.Unlock()
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			if e.Request != nil && e.Request.Method == "POST" && strings.SplitN(e.Request.URL, "?", 2)[0] == decodeURL {
				posts[e.RequestID] = true
			}
		case *network.EventResponseReceived:
			if posts[e.RequestID] && e.Response != nil {
				decodes = append(decodes, e.Response.Status)
			}
		}
	}))
	runID := events[0].GetWorkflowExecutionStartedEventAttributes().GetOriginalExecutionRunId()
	page := "http://127.0.0.1:" + uiPort + "/namespaces/" + temporalNS + "/workflows/" + url.PathEscape(id) + "/" + runID + "/history"
	// The input, decoded, in the page's Input card.
	text := webUIWaitText(t, tab, page, 0, 90*time.Second, "Input", `"text": "`+secret+`"`)
	require.NotContains(t, text, "binary/encrypted")
	mu2.Lock()
	defer mu2.Unlock()
	require.NotEmpty(t, decodes, "the page showed the text without calling %s", decodeURL)
	for _, code := range decodes {
		require.Equal(t, int64(200), code, "%s answered the page", decodeURL)
	}
	t.Logf("decoded text shown after %s, through %d calls to %s", time.Since(began).Round(time.Millisecond), len(decodes), decodeURL)
}
