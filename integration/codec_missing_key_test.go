package integration

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/internal/codec"
)

// devRun is one `agentdev run` of TestMissingCodecKeyIsNamed.
type devRun struct {
	cmd            *exec.Cmd
	api            string // http://host:port
	stdout, stderr *syncBuffer
}

// startDevRun runs `agentdev run` on dir (no demo, no UI, no broker) with
// keysEnv as AGENT_CODEC_KEYS ("" leaves it unset) and waits for its API.
func startDevRun(t *testing.T, dir, keysEnv string) *devRun {
	t.Helper()
	addr := freeAddr(t)
	cmd := exec.Command(agentdevBinary(t), "run", "--data", dir, "--port", "0", "--ui-port", "-1", "--nats-port", "-1", "--demo=false")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OPENAI_") && !strings.HasPrefix(kv, "AGENT_") && !strings.HasPrefix(kv, "API_KEYS=") && !strings.HasPrefix(kv, "DEVELOPER_KEYS=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "AGENT_API_ADDR="+addr, "API_KEYS=call-key=call+view", "DEVELOPER_KEYS=dev-key")
	if keysEnv != "" {
		cmd.Env = append(cmd.Env, codec.EnvKeys+"="+keysEnv)
	}
	r := &devRun{cmd: cmd, api: "http://" + addr, stdout: &syncBuffer{}, stderr: &syncBuffer{}}
	cmd.Stdout, cmd.Stderr = r.stdout, r.stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { stopProcess(cmd) })
	eventually(t, 2*time.Minute, "agentdev run's Tasks API", func() bool { return strings.Contains(r.stdout.String(), "Tasks API:") })
	return r
}

// call makes one Tasks API call and returns its status, body and headers.
func (r *devRun) call(t *testing.T, method, path, key, body string) (int, string, http.Header) {
	t.Helper()
	code, b, h, err := r.do(method, path, key, body)
	require.NoError(t, err)
	return code, b, h
}

func (r *devRun) do(method, path, key, body string) (int, string, http.Header, error) {
	req, err := http.NewRequest(method, r.api+path, strings.NewReader(body))
	if err != nil {
		return 0, "", nil, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header, err
}

// The reproduction of "a missing codec key looks like a corrupted store"
// (docs/configuration.md#encryption), as a new user meets it: `make run`
// with AGENT_CODEC_KEYS stores a prompt, a task and a run; a start on the
// same data folder without the key says so at start, and then names the key
// and the variable where people look: the API's problem detail (503, not
// "500 internal: ... Workflow Task in failed state"), /healthz, the log at
// error level; the workflows are never reported nondeterministic. A start
// with the key again answers everything as before.
func TestMissingCodecKeyIsNamed(t *testing.T) {
	dir := t.TempDir()
	keysEnv := "k1:" + base64.StdEncoding.EncodeToString(randomKey(t))

	// With the key: a prompt, a task and a run, all encrypted under k1.
	r := startDevRun(t, dir, keysEnv)
	code, body, _ := r.call(t, http.MethodPost, "/v1/prompts/p/versions", "dev-key", `{"text": "You answer."}`)
	require.Equal(t, http.StatusCreated, code, body)
	code, body, _ = r.call(t, http.MethodPost, "/v1/tasks", "dev-key",
		`{"name": "t", "prompt": {"name": "p", "version": 1}, "model": "demo/offline", "maxTokens": 200, "input": {"maxBytes": 2000}}`)
	require.Equal(t, http.StatusCreated, code, body)
	code, body, h := r.call(t, http.MethodPost, "/v1/tasks/t/run", "call-key", `{"input": "hello under k1"}`)
	require.Equal(t, http.StatusOK, code, body)
	run := h.Get("X-Request-Id")
	require.NotEmpty(t, run)
	stopProcess(r.cmd)

	// Without it: said at start, then on every surface.
	began := time.Now()
	r = startDevRun(t, dir, "")
	require.Contains(t, r.stderr.String(), `Warning: `+dir+` holds data encrypted with key "k1" (listed in `+filepath.Join(dir, "codec-keys")+`), and AGENT_CODEC_KEYS is not set`)
	// A write waits out the first failed workflow tasks (about 20 s), so
	// it runs while the reads are checked.
	type answer struct {
		code int
		body string
	}
	written := make(chan answer, 1)
	go func() {
		code, body, _, err := r.do(http.MethodPost, "/v1/prompts/p/versions", "dev-key", `{"text": "You answer again."}`)
		if err != nil {
			body = err.Error()
		}
		written <- answer{code, body}
	}()
	requireMissingKeyProblem := func(code int, body string) {
		t.Helper()
		require.Equal(t, http.StatusServiceUnavailable, code, body)
		var p struct{ Title, Code, Detail string }
		require.NoError(t, json.Unmarshal([]byte(body), &p), body)
		require.Equal(t, "Encryption key missing", p.Title, body)
		require.Equal(t, "unavailable", p.Code, body)
		require.Contains(t, p.Detail, `encrypted with key "k1", but AGENT_CODEC_KEYS is not set in this process`, body)
	}
	code, body, _ = r.call(t, http.MethodGet, "/v1/tasks/t", "dev-key", "")
	requireMissingKeyProblem(code, body)
	code, body, _ = r.call(t, http.MethodGet, "/v1/prompts/p", "dev-key", "")
	requireMissingKeyProblem(code, body)
	// The run's record (its memo) is under k1 too: it reads as not started
	// by this API, and the answer says why it may be.
	code, body, _ = r.call(t, http.MethodGet, "/v1/runs/"+run+"/messages", "call-key", "")
	require.Equal(t, http.StatusNotFound, code, body)
	require.Contains(t, body, `its record is encrypted with a key this process cannot read: it has met data under key \"k1\", which its AGENT_CODEC_KEYS does not list`)
	resp, err := http.Get(r.api + "/healthz")
	require.NoError(t, err)
	health, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", health)
	require.True(t, strings.HasPrefix(string(health), "degraded\ncodec: key \"k1\" missing: encrypted with key \"k1\", but AGENT_CODEC_KEYS is not set"), "%s", health)
	select {
	case a := <-written:
		requireMissingKeyProblem(a.code, a.body)
		t.Logf("the write without the key answered %s after the start", time.Since(began).Round(time.Second))
	case <-time.After(45 * time.Second):
		t.Fatal("the write did not answer within 45 s")
	}
	require.Contains(t, r.stderr.String(), `Error: key "k1" missing: encrypted with key "k1", but AGENT_CODEC_KEYS is not set`)
	stopProcess(r.cmd)
	logs, err := os.ReadFile(filepath.Join(dir, "agentdev.log"))
	require.NoError(t, err)
	var named bool
	for _, line := range strings.Split(string(logs), "\n") {
		named = named || (strings.Contains(line, "\tERROR\t") && strings.Contains(line, `"key_id": "k1"`) && strings.Contains(line, `"variable": "AGENT_CODEC_KEYS"`))
	}
	require.True(t, named, "no error-level log line names k1 and AGENT_CODEC_KEYS:\n%s", logs)
	for _, never := range []string{"nondetermin", "missing replay command", "BadUpdateWorkflowExecutionMessage"} {
		require.NotContains(t, strings.ToLower(string(logs)), strings.ToLower(never))
	}

	// With the key again: the workflows go on once Temporal retries their
	// failed workflow tasks; the run written before reads as it was.
	r = startDevRun(t, dir, keysEnv)
	require.NotContains(t, r.stderr.String(), "Warning:")
	began = time.Now()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(500 * time.Millisecond) {
		code, body, _ = r.call(t, http.MethodPost, "/v1/prompts/p/versions", "dev-key", `{"text": "You answer, third."}`)
		if code == http.StatusCreated {
			t.Logf("the first write with the key again answered %s after the start", time.Since(began).Round(time.Second))
			break
		}
		require.True(t, time.Now().Before(deadline), "a write with the key again: %d %s", code, body)
	}
	code, body, _ = r.call(t, http.MethodGet, "/v1/tasks/t", "dev-key", "")
	require.Equal(t, http.StatusOK, code, body)
	code, body, _ = r.call(t, http.MethodGet, "/v1/runs/"+run+"/messages", "call-key", "")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, "hello under k1")
	code, body, _ = r.call(t, http.MethodPost, "/v1/tasks/t/run", "call-key", `{"input": "hello again"}`)
	require.Equal(t, http.StatusOK, code, body)
	resp, err = http.Get(r.api + "/healthz")
	require.NoError(t, err)
	health, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	require.True(t, bytes.HasPrefix(health, []byte("ok\n")), "%s", health)
}
