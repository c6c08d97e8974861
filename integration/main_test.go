// Package integration runs the runtime end to end: the project's embedded
// Temporal server (one process per test run, started here), real workers,
// real HTTP to a model server that speaks the OpenAI protocol, real files.
package integration

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"gocloud.dev/blob"

	"github.com/agenttask/agenttask/internal/llm"
	"github.com/agenttask/agenttask/internal/logging"
	"github.com/agenttask/agenttask/internal/mount"
	"github.com/agenttask/agenttask/internal/testmodel"
	"github.com/agenttask/agenttask/internal/workerkit"
	"github.com/agenttask/agenttask/starter"
)

// Shared by every test: one server, one client.
var (
	temporalAddr string
	temporalUI   string // the embedded Web UI of the shared server
	natsURL      string // the broker agentdev embeds (streamed runs)
	agentdevBin  string
	temporalNS   = "default"
	sdk          client.Client
	repoRoot     string
	workDir      string
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	var err error
	repoRoot, err = filepath.Abs("..")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	workDir, err = os.MkdirTemp("", "agenttask-it-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(workDir)
	stop, err := startServer()
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration: starting the embedded Temporal server:", err)
		return 1
	}
	defer stop()
	sdk, err = client.Dial(client.Options{HostPort: temporalAddr, Namespace: temporalNS, Logger: quietLogger()})
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration: dialing:", err)
		return 1
	}
	defer sdk.Close()
	return m.Run()
}

// startServer runs the dev server binary (AGENTDEV_BIN, built by make test;
// built here when absent) on free ports with an in-memory database.
func startServer() (func(), error) {
	if addr := os.Getenv("AGENT_IT_TEMPORAL_ADDRESS"); addr != "" {
		temporalAddr = addr                      // a server someone else runs
		natsURL = os.Getenv("AGENT_IT_NATS_URL") // and its broker, if any: the streaming tests need one
		return func() {}, nil
	}
	agentdevBin = os.Getenv("AGENTDEV_BIN")
	if agentdevBin == "" {
		agentdevBin = filepath.Join(workDir, "agentdev")
		if err := goBuild(agentdevBin, "./cmd/agentdev"); err != nil {
			return nil, err
		}
	}
	serverArgs = []string{"--port", "0", "--ui-port", "0", "--nats-port", "0", "--log-level", "error"}
	if db := os.Getenv(EnvDB); db != "" {
		serverArgs = append(serverArgs, "--db", db) // make test-postgres
	}
	cmd, f, err := runAgentdevServer(serverArgs...)
	if err != nil {
		return nil, err
	}
	serverCmd = cmd
	temporalAddr, temporalUI, natsURL = f[1], f[2], f[3]
	return func() { stopProcess(serverCmd) }, nil
}

// EnvDB, when set, is the shared server's --db: `make test-postgres` runs
// the tests over PostgreSQL with a postgres:// URL.
const EnvDB = "AGENTDEV_DB"

// The shared server's process and flags (postgres_test.go restarts it).
var (
	serverCmd  *exec.Cmd
	serverArgs []string
)

// agentdevPath is the agentdev binary: the shared server's, or one built
// once here when the tests run against another server
// (AGENT_IT_TEMPORAL_ADDRESS), for the tests that start servers of their own.
func agentdevPath() (string, error) {
	if agentdevBin != "" {
		return agentdevBin, nil
	}
	ownAgentdevOnce.Do(func() {
		ownAgentdevBin = filepath.Join(workDir, "agentdev")
		ownAgentdevErr = goBuild(ownAgentdevBin, "./cmd/agentdev")
	})
	return ownAgentdevBin, ownAgentdevErr
}

var (
	ownAgentdevOnce sync.Once
	ownAgentdevBin  string
	ownAgentdevErr  error
)

// agentdevBinary is agentdevPath for a test: a failed build fails it.
func agentdevBinary(t *testing.T) string {
	t.Helper()
	bin, err := agentdevPath()
	require.NoError(t, err)
	return bin
}

// runAgentdevServer starts `agentdev server` and waits for its READY line:
// READY <frontend> <ui or -> <broker or ->.
func runAgentdevServer(args ...string) (*exec.Cmd, []string, error) {
	bin, err := agentdevPath()
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(bin, append([]string{"server"}, args...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	ready := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if f := strings.Fields(sc.Text()); len(f) == 4 && f[0] == "READY" {
				ready <- f
			}
		}
	}()
	select {
	case f := <-ready:
		return cmd, f, nil
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		return nil, nil, fmt.Errorf("no READY line within 2 minutes")
	}
}

// stopProcess asks a process to stop and waits, killing it if it hangs.
func stopProcess(cmd *exec.Cmd) {
	func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
		}
	}()
}

func goBuild(out, pkg string) error { return goBuildIn(repoRoot, out, pkg) }

// goBuildIn builds pkg of the module in dir into out.
func goBuildIn(dir, out, pkg string) error {
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd.Run()
}

func quietLogger() *logAdapter { return &logAdapter{} }

// harness is one test's world: its own model server, task queue, transcript
// folder and in-process worker, so tests never see each other's tasks.
type harness struct {
	t          *testing.T
	model      *testmodel.Server
	queue      string
	transcript string
	tasks      *starter.Client
	// wrapMount, set before startWorker, wraps the worker's mount buckets.
	wrapMount func(*blob.Bucket) *blob.Bucket
	// mounts is the workers' AGENT_MOUNTS: "files" and "other", each a
	// folder of this test's own.
	mounts mount.Mounts
}

var queueSeq atomic.Int64

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{
		t:          t,
		model:      testmodel.Start(),
		queue:      fmt.Sprintf("it-%s-%d", strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")), queueSeq.Add(1)),
		transcript: "file://" + filepath.ToSlash(t.TempDir()),
		mounts: mount.Mounts{
			"files": "file://" + filepath.ToSlash(t.TempDir()),
			"other": "file://" + filepath.ToSlash(t.TempDir()),
		},
	}
	t.Cleanup(h.model.Close)
	h.tasks = starter.New(sdk, h.queue).CheckMounts(h.mounts)
	return h
}

// workerConfig is the configuration a worker of this harness runs with.
func (h *harness) workerConfig() workerkit.Config {
	return workerkit.Config{
		TaskQueue:     h.queue,
		TranscriptURL: h.transcript,
		Models:        llm.RouterOptions{Endpoints: map[string]llm.Endpoint{"test": {BaseURL: h.model.URL}}},
		LogLevel:      "warn",

		WrapMountBucket: h.wrapMount,
		Mounts:          h.mounts,
		BrokerURL:       natsURL,
	}
}

// startWorker runs an in-process worker until the test ends.
func (h *harness) startWorker() {
	h.t.Helper()
	h.runWorker(h.workerConfig())
}

// runWorker runs an in-process worker with cfg until stop is called or the
// test ends.
func (h *harness) runWorker(cfg workerkit.Config) (stop func()) {
	h.t.Helper()
	return h.runWorkerOn(sdk, temporalNS, cfg)
}

// runWorkerOn runs the worker on namespace ns of c's server.
func (h *harness) runWorkerOn(c client.Client, ns string, cfg workerkit.Config) (stop func()) {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	z, err := logging.New("warn", false)
	require.NoError(h.t, err)
	wc, err := client.NewClientFromExisting(c, client.Options{Namespace: ns, Logger: logging.NewSDKLogger(z)})
	require.NoError(h.t, err)
	go func() { done <- workerkit.Run(ctx, cfg, wc) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				h.t.Errorf("worker: %v", err)
			}
			wc.Close()
		})
	}
	h.t.Cleanup(stop)
	return stop
}

// workerEnv is the environment of a worker process serving this harness.
func (h *harness) workerEnv() []string {
	return append(os.Environ(),
		"TEMPORAL_ADDRESS="+temporalAddr,
		"TEMPORAL_NAMESPACE="+temporalNS,
		workerkit.EnvTaskQueue+"="+h.queue,
		workerkit.EnvTranscriptURL+"="+h.transcript,
		llm.EnvModelProviders+`={"test":{"baseURL":"`+h.model.URL+`"}}`,
		workerkit.EnvLogLevel+"=warn",
		mount.EnvMounts+"="+jsonOf(h.mounts),
	)
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
