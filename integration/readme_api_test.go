package integration

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/agenttask/agenttask/internal/broker"
	"github.com/agenttask/agenttask/internal/llm"
	"github.com/agenttask/agenttask/internal/logging"
	"github.com/agenttask/agenttask/internal/testmodel"
	"github.com/agenttask/agenttask/internal/workerkit"
)

var (
	apiBinOnce sync.Once
	apiBin     string
	apiBinErr  error
)

// The README's curl session runs as it stands against bin/api (a real
// process on the shared Temporal server) and a worker whose "openai"
// provider is the test model.
func TestReadmeCurlSession(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	require.NoError(t, err)
	m := regexp.MustCompile("(?s)<!-- curl-session -->\\s*```sh\\n(.*?)```\\s*<!-- /curl-session -->").FindSubmatch(readme)
	require.NotNil(t, m, "the README's curl session block")
	script := string(m[1])

	h := newHarness(t)
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		return testmodel.Reply{Text: "Pole sana, Amina. Your order leaves today."}
	})
	cfg := h.workerConfig()
	cfg.Models = llm.RouterOptions{Endpoints: map[string]llm.Endpoint{"openai": {BaseURL: h.model.URL}}}
	startWorkerWith(t, cfg)

	apiBin := apiBinary(t)
	addr := freeAddr(t)
	const dev, key = "readme-dev-key", "readme-call-key"
	noKeys := exec.Command(apiBin)
	noKeys.Env = append(os.Environ(), "TEMPORAL_ADDRESS="+temporalAddr, "API_KEYS=", "DEVELOPER_KEYS=")
	out, err := noKeys.CombinedOutput()
	require.Error(t, err, "the api refuses to start without keys")
	require.Contains(t, string(out), "no keys")

	// The catalogue from a file (MODEL_CATALOG), prices read exactly.
	catalogFile := filepath.Join(t.TempDir(), "models.json")
	const catalogJSON = `{"models": [{"name": "openai/gpt-4o-mini", "maxTokens": 16384, "reasoning": false, "inputUnitsPerToken": 0.00015, "outputUnitsPerToken": 0.0006}]}`
	require.NoError(t, os.WriteFile(catalogFile, []byte(catalogJSON), 0o644))
	proc := exec.Command(apiBin)
	proc.Env = append(os.Environ(), "TEMPORAL_ADDRESS="+temporalAddr, "TEMPORAL_NAMESPACE="+temporalNS, "MODEL_CATALOG="+catalogFile,
		"AGENT_API_ADDR="+addr, "AGENT_API_TASK_QUEUE="+h.queue+"-api", "AGENT_TASK_QUEUE="+h.queue,
		"DEVELOPER_KEYS="+dev, "API_KEYS="+key+"=call+view", "AGENT_API_PROCESSED_IN=KE", broker.EnvURL+"="+natsURL)
	var logs bytes.Buffer
	proc.Stdout, proc.Stderr = &logs, &logs
	require.NoError(t, proc.Start())
	t.Cleanup(func() { stopProcess(proc) })
	waitListening(t, addr)

	req, err := http.NewRequest("GET", "http://"+addr+"/v1/models", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	models, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.JSONEq(t, `{"data": [{"name": "openai/gpt-4o-mini", "maxTokens": 16384, "reasoning": false, "inputUnitsPerToken": 0.00015, "outputUnitsPerToken": 0.0006}]}`, string(models))
	require.Contains(t, string(models), `0.00015`, "the price as written, not through a float")

	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Env = append(os.Environ(), "API=http://"+addr, "DEV_KEY="+dev, "KEY="+key)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "stdout:\n%s\nstderr:\n%s\napi:\n%s", stdout.String(), stderr.String(), logs.String())
	got := stdout.String()
	require.Contains(t, got, `"version":1`)
	require.Contains(t, got, `"text":"Pole sana, Amina. Your order leaves today."`)
	require.Contains(t, got, `"maxTokens":150`)
	require.Contains(t, got, "\n409\n", "the disabled task's run")
	// Its id is the event's stream sequence in the shared broker: any number.
	require.Regexp(t, `\nid: [1-9][0-9]*\ndata: \{"type":"text","text":"Pole `, got, "the streamed run's first delta (alone, or with those queued behind it)")
	require.Contains(t, got, `data: {"type":"done","stopReason":"end","usage":{`, "the streamed run's end")
	require.Equal(t, 6, strings.Count(got, `{"data":`), "prompt, task, run, messages, change, disable: %s", got)
}

// startWorkerWith runs an in-process worker with cfg until the test ends.
func startWorkerWith(t *testing.T, cfg workerkit.Config) {
	t.Helper()
	z, err := logging.New("warn", false)
	require.NoError(t, err)
	wc, err := client.NewClientFromExisting(sdk, client.Options{Logger: logging.NewSDKLogger(z)})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- workerkit.Run(ctx, cfg, wc) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
		wc.Close()
	})
}
