package integration

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/broker"
	"github.com/agenttask/agenttask/internal/broker/embedded"
	"github.com/agenttask/agenttask/internal/tasksapi"
	"github.com/agenttask/agenttask/internal/testmodel"
	"github.com/agenttask/agenttask/worker"
)

// oldBrokerLimit is how long the worker and the api used to wait for an
// unreachable broker before they exited.
const oldBrokerLimit = 30 * time.Second

// The broker is optional at run time. bin/worker and bin/api, given a
// broker that does not listen, start and keep serving past the old 30 s
// limit: /healthz and their logs say streaming is off, unstreamed runs
// answer (through the API, and a task started with stream through the
// Temporal client), and a streamed API run or /events is refused with
// 503 streaming_unavailable. The broker then comes up on that address:
// both reconnect by themselves, say streaming is on, and a run streams.
func TestWorkerAndAPIServeWithoutTheBroker(t *testing.T) {
	h := newHarness(t)
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		return testmodel.Reply{Chunks: []string{"Pole sana, ", "Amina."}}
	})
	brokerAddr := freeAddr(t) // nothing listens there
	brokerURL := "nats://" + brokerAddr
	began := time.Now()

	healthAddr := freeAddr(t)
	w := startWatched(t, "worker", workerBinary(t), append(h.workerEnv(),
		broker.EnvURL+"="+brokerURL, "AGENT_HEALTH_ADDR="+healthAddr,
		worker.EnvLogLevel+"=info")) // "streaming is on" is an info line
	apiAddr := freeAddr(t)
	a := startWatched(t, "api", apiBinary(t), append(os.Environ(), "TEMPORAL_ADDRESS="+temporalAddr, "TEMPORAL_NAMESPACE="+temporalNS,
		"AGENT_API_ADDR="+apiAddr, "AGENT_API_TASK_QUEUE="+h.queue+"-api", worker.EnvTaskQueue+"="+h.queue,
		tasksapi.EnvStorePrefix+"=it/"+h.queue+"/",
		"DEVELOPER_KEYS="+devKey, "API_KEYS="+callKey+"=call,"+viewKey+"=view", "AGENT_API_PROCESSED_IN=KE",
		broker.EnvURL+"="+brokerURL))
	waitListening(t, apiAddr) // before, the api did not listen until it reached the broker
	api := &apiServer{t: t, url: "http://" + apiAddr, openapi: checkedInOpenAPI(t, "http://"+apiAddr)}

	off := "streaming: off (the broker at " + brokerURL + " is unreachable"
	for _, p := range []*watched{w, a} {
		p.awaitLog(t, "streaming is off", 10*time.Second)
	}
	workerHealth, apiHealth := "http://"+healthAddr+"/healthz", api.url+"/healthz"
	awaitHealth(t, workerHealth, off)
	awaitHealth(t, apiHealth, off)

	// Unstreamed runs answer: through the API, and a task started with
	// stream through the Temporal client (its worker drops the events).
	createSeedTask(t, api, seedTask())
	unstreamed := map[string]any{"input": "My order is late.", "variables": map[string]any{"customer": "Amina"}}
	r := api.call("POST", "/v1/tasks/support-reply/run", callKey, unstreamed)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	require.Equal(t, "Pole sana, Amina.", r.data()["text"])
	runID := r.Header.Get("X-Request-Id")
	task := startTask(t, h, "streamed-while-away", map[string]any{"agent": agent("a"), "input": text("hi"), "mode": "single", "stream": true})
	var res contract.Result
	require.NoError(t, task.Get(ctxT(t, 60*time.Second), &res), "a streamed task answers while the broker is away")
	require.Equal(t, "Pole sana, Amina.", contract.TextOf(*res.LastOutput))

	// A stream is refused, clearly.
	streamed := api.call("POST", "/v1/tasks/support-reply/run", callKey, streamBody)
	requireProblem(t, streamed, http.StatusServiceUnavailable, tasksapi.CodeStreamingUnavailable, "")
	require.Contains(t, streamed.JSON["detail"], "streaming is off: the broker at "+brokerURL+" is unreachable")
	require.Contains(t, streamed.JSON["detail"], "run without stream")
	events := api.call("GET", "/v1/runs/"+runID+"/events", viewKey, nil)
	requireProblem(t, events, http.StatusServiceUnavailable, tasksapi.CodeStreamingUnavailable, "")

	// Both outlive the old limit (from the start of both processes, so
	// the wait covers it whatever the Temporal dial took), still serving.
	limit := time.Until(began.Add(oldBrokerLimit + 2*time.Second))
	select {
	case <-w.exited:
		t.Fatalf("the worker exited after %s: %s", time.Since(began), w.state)
	case <-a.exited:
		t.Fatalf("the api exited after %s: %s", time.Since(began), a.state)
	case <-time.After(limit):
	}
	awaitHealth(t, workerHealth, off)
	awaitHealth(t, apiHealth, off)
	r = api.call("POST", "/v1/tasks/support-reply/run", callKey, unstreamed)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)

	// The broker comes up where they look for it: both connect by
	// themselves, and a run streams from the worker to the API.
	host, port, err := net.SplitHostPort(brokerAddr)
	require.NoError(t, err)
	n, err := strconv.Atoi(port)
	require.NoError(t, err)
	nats, err := embedded.Start(embedded.Options{Host: host, Port: n})
	require.NoError(t, err)
	t.Cleanup(nats.Shutdown)
	awaitHealth(t, workerHealth, "streaming: on\n")
	awaitHealth(t, apiHealth, "streaming: on\n")
	for _, p := range []*watched{w, a} {
		p.awaitLog(t, "streaming is on", 10*time.Second)
	}
	s := openEvents(t, api.url, "/v1/tasks/support-reply/run", callKey, streamBody)
	require.Equal(t, http.StatusOK, s.Resp.StatusCode)
	got := s.until("done", 60*time.Second)
	require.Equal(t, "Pole sana, Amina.", textOf(got))
	requireIDsFrom(t, 1, got)
	require.True(t, h.model.Calls()[h.model.CallCount()-1].Stream, "the worker streamed the model's text again")
}

// watched is a process whose exit and logs the test follows.
type watched struct {
	name   string
	cmd    *exec.Cmd
	exited chan struct{}
	state  string // how it exited, once exited is closed
	mu     sync.Mutex
	logs   bytes.Buffer
}

func (p *watched) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.Write(b)
}

// startWatched runs bin with env, its output on the test's stderr and kept;
// it is stopped when the test ends.
func startWatched(t *testing.T, name, bin string, env []string) *watched {
	t.Helper()
	p := &watched{name: name, exited: make(chan struct{})}
	p.cmd = exec.Command(bin)
	p.cmd.Env = env
	p.cmd.Stdout = io.MultiWriter(os.Stderr, p)
	p.cmd.Stderr = p.cmd.Stdout
	require.NoError(t, p.cmd.Start())
	go func() {
		err := p.cmd.Wait()
		p.state = p.cmd.ProcessState.String()
		if err != nil {
			p.state += " (" + err.Error() + ")"
		}
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(20 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

// awaitLog waits until the process has logged a line containing s.
func (p *watched) awaitLog(t *testing.T, s string, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, p.name+" logging "+s, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return strings.Contains(p.logs.String(), s)
	})
}

// awaitHealth waits (at most 30 s) until url answers 200 with a body
// containing want.
func awaitHealth(t *testing.T, url, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		last, ok := health(url, want)
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not report %q within 30 s; last: %s", url, want, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func health(url, want string) (string, bool) {
	resp, err := http.Get(url)
	if err != nil {
		return err.Error(), false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.Status + " " + string(b), resp.StatusCode == http.StatusOK && strings.Contains(string(b), want)
}
