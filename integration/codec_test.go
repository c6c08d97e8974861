package integration

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/codec"
	"github.com/agenttask/agenttask/internal/workerkit"
	"github.com/agenttask/agenttask/internal/workflows"
	"github.com/agenttask/agenttask/starter"
)

// TestCodecEncryptedTask runs a task with codec keys set on a server of its
// own whose SQLite database is a file: the sent texts are found neither in
// the database's files nor in the transcript folder, the history read
// without the codec holds only binary/encrypted payloads, and the task goes
// on after the key is rotated (k1 still listed, k2 current) on a worker
// process configured by AGENT_CODEC_KEYS / AGENT_CODEC_KEY_ID, which reads
// the history and the transcript written under k1.
func TestCodecEncryptedTask(t *testing.T) {
	dbDir := t.TempDir()
	dbFile := filepath.Join(dbDir, "temporal.db")
	srv, f, err := runAgentdevServer("--db", dbFile, "--port", "0", "--ui-port", "-1", "--nats-port", "-1", "--log-level", "error")
	require.NoError(t, err)
	t.Cleanup(func() { stopProcess(srv) })
	addr := f[1]

	k1, k2 := randomKey(t), randomKey(t)
	keysEnv := "k1:" + base64.StdEncoding.EncodeToString(k1) + ",k2:" + base64.StdEncoding.EncodeToString(k2)
	c1, err := codec.New(codec.Keys{"k1": k1}, "k1")
	require.NoError(t, err)
	c2, err := codec.FromGetenv(func(k string) string {
		return map[string]string{codec.EnvKeys: keysEnv, codec.EnvKeyID: "k2"}[k]
	})
	require.NoError(t, err)

	dial := func(c *codec.Codec) client.Client {
		o := client.Options{HostPort: addr, Namespace: temporalNS, Logger: quietLogger()}
		c.Apply(&o)
		cl, err := client.Dial(o)
		require.NoError(t, err)
		t.Cleanup(cl.Close)
		return cl
	}
	plain, enc1, enc2 := dial(nil), dial(c1), dial(c2)

	h := newHarness(t)
	cfg := h.workerConfig()
	cfg.BrokerURL = "" // this server runs no broker
	cfg.Codec = c1
	ctx, stopWorker := context.WithCancel(context.Background())
	workerDone := make(chan error, 1)
	go func() { workerDone <- workerkit.Run(ctx, cfg, enc1) }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			stopWorker()
			require.NoError(t, <-workerDone)
		}
	}
	t.Cleanup(stop)

	secret := func(n string) string {
		return "zebra-quartz-" + n + "-" + base64.RawURLEncoding.EncodeToString(randomKey(t)[:9])
	}
	s1, s2, s3 := secret("one"), secret("two"), secret("three")
	id := "codec-" + base64.RawURLEncoding.EncodeToString(randomKey(t)[:6])
	_, err = enc1.ExecuteWorkflow(ctxT(t, 10*time.Second), client.StartWorkflowOptions{ID: id, TaskQueue: h.queue}, "AgentTask",
		map[string]any{"agent": agent("codec"), "input": text(s1)})
	require.NoError(t, err)
	waitOutputsWith(t, enc1, id, 1)
	sendWith(t, enc1, id, s2)
	waitOutputsWith(t, enc1, id, 2)
	texts := messageTexts(t, enc1, id)
	require.Contains(t, texts, s1)
	require.Contains(t, texts, s2)
	require.Contains(t, texts, "echo: "+s2, "the model saw the decrypted input")

	// Without the codec, a query's answer does not decode.
	if v, err := plain.QueryWorkflow(ctxT(t, 10*time.Second), id, "", "status"); err == nil {
		var st contract.Status
		require.Error(t, v.Get(&st), "a plain client decoded an encrypted query answer")
	}

	// History through a client without the codec: every payload encrypted
	// under k1, no secret anywhere.
	events := historyWith(t, plain, id, "")
	ids := payloadKeyIDs(t, events, s1, s2)
	require.Equal(t, map[string]int{"k1": ids["k1"]}, ids, "history payloads by key id")
	require.Greater(t, ids["k1"], 5)
	started := events[0].GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads()[0]
	require.Equal(t, "binary/encrypted", string(started.Metadata["encoding"]))
	require.Equal(t, "k1", string(started.Metadata["encryption-key-id"]))

	// The database and the transcript folder hold no secret. The task ID
	// is in the database in the clear, so the search does read it.
	files := requireAbsent(t, dbDir, [][]byte{[]byte(id)}, s1, s2)
	require.NotEmpty(t, files)
	tdir := strings.TrimPrefix(h.transcript, "file://")
	objects := requireAbsent(t, tdir, nil, s1, s2)
	require.GreaterOrEqual(t, len(objects), 4, "transcript objects: %v", objects)
	for _, o := range objects {
		b, err := os.ReadFile(o)
		require.NoError(t, err)
		require.True(t, bytes.HasPrefix(b, append(append([]byte{}, codec.BlobMagic...), 2, 'k', '1')), "%s is not encrypted under k1", o)
	}

	// Rotation: the in-process worker stops; a worker process with k2
	// current (k1 still listed) replays the history and reads the
	// transcript written under k1.
	stop()
	cmd := exec.Command(workerBinary(t))
	cmd.Env = append(h.workerEnv(), "TEMPORAL_ADDRESS="+addr, "AGENT_NATS_URL=", codec.EnvKeys+"="+keysEnv, codec.EnvKeyID+"=k2")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { stopProcess(cmd) })
	sendWith(t, enc2, id, s3)
	waitOutputsWith(t, enc2, id, 3)
	texts = messageTexts(t, enc2, id)
	for _, s := range []string{s1, s2, s3} {
		require.Contains(t, texts, s)
	}
	// The model's window, read from the transcript, had the k1 entries.
	require.Contains(t, texts, "echo: "+s3)
	events = historyWith(t, plain, id, "")
	ids = payloadKeyIDs(t, events, s1, s2, s3)
	require.Greater(t, ids["k1"], 5)
	require.Greater(t, ids["k2"], 2, "payloads written after the rotation are under k2")
	require.Len(t, ids, 2)
	// A client that no longer lists k1 cannot read the start argument.
	onlyK2, err := codec.New(codec.Keys{"k2": k2}, "k2")
	require.NoError(t, err)
	var args map[string]any
	err = onlyK2.DataConverter().FromPayloads(events[0].GetWorkflowExecutionStartedEventAttributes().GetInput(), &args)
	require.ErrorIs(t, err, codec.ErrUnknownKey)

	requireAbsent(t, dbDir, [][]byte{[]byte(id)}, s1, s2, s3)
	objects = requireAbsent(t, tdir, nil, s1, s2, s3)
	var underK2 int
	for _, o := range objects {
		b, _ := os.ReadFile(o)
		if bytes.HasPrefix(b, append(append([]byte{}, codec.BlobMagic...), 2, 'k', '2')) {
			underK2++
		}
	}
	require.Greater(t, underK2, 0, "no transcript object was written under k2")

	// Resume (the starter reads the start argument from the encrypted
	// history, and the new task reads the k1 and k2 transcript entries).
	require.NoError(t, enc2.SignalWorkflow(ctxT(t, 10*time.Second), id, "", "close", nil))
	require.NoError(t, enc2.GetWorkflow(ctxT(t, 30*time.Second), id, "").Get(ctxT(t, 30*time.Second), nil))
	s4 := secret("four")
	newID, err := starter.New(enc2, h.queue).WithDataConverter(c2.DataConverter()).Resume(ctxT(t, 30*time.Second), id,
		contract.TaskIO{Message: []contract.ContentPart{contract.TextPart(s4)}}, starter.StartOptions{TaskID: id + "-resumed"})
	require.NoError(t, err)
	waitOutputsWith(t, enc2, newID, 1)
	texts = messageTexts(t, enc2, newID)
	for _, s := range []string{s1, s2, s3, s4, "echo: " + s4} {
		require.Contains(t, texts, s)
	}

	// The api binary serves the codec server with the same variables: a
	// decode key decodes a payload of the history; no key, a call key and
	// a view key (decoding needs its own permission) are refused.
	apiAddr := freeAddr(t)
	api := exec.Command(apiBinary(t))
	api.Env = append(os.Environ(), "TEMPORAL_ADDRESS="+addr, "AGENT_NATS_URL=", "API_KEYS=decoder-key=decode,viewer-key=view,caller-key=call",
		"AGENT_API_ADDR="+apiAddr, codec.EnvKeys+"="+keysEnv, codec.EnvKeyID+"=k2", "AGENT_API_TASK_QUEUE="+h.queue+"-api")
	api.Stdout, api.Stderr = os.Stderr, os.Stderr
	require.NoError(t, api.Start())
	t.Cleanup(func() { stopProcess(api) })
	body, err := protojson.Marshal(&commonpb.Payloads{Payloads: events[0].GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads()})
	require.NoError(t, err)
	post := func(key string) (int, []byte) {
		req, err := http.NewRequest(http.MethodPost, "http://"+apiAddr+"/codec/decode", bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, nil
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	eventually(t, time.Minute, "the api's codec server", func() bool { code, _ := post("decoder-key"); return code != 0 })
	code, answer := post("decoder-key")
	require.Equal(t, http.StatusOK, code, "%s", answer)
	var decoded commonpb.Payloads
	require.NoError(t, protojson.Unmarshal(answer, &decoded))
	require.Len(t, decoded.Payloads, 1)
	require.Equal(t, "json/plain", string(decoded.Payloads[0].Metadata["encoding"]))
	require.Contains(t, string(decoded.Payloads[0].Data), s1)
	code, answer = post("")
	require.Equal(t, http.StatusUnauthorized, code, "%s", answer)
	code, answer = post("caller-key")
	require.Equal(t, http.StatusForbidden, code, "%s", answer)
	code, answer = post("viewer-key")
	require.Equal(t, http.StatusForbidden, code, "%s", answer)
}

func randomKey(t *testing.T) []byte {
	k := make([]byte, 32)
	_, err := rand.Read(k)
	require.NoError(t, err)
	return k
}

func waitOutputsWith(t *testing.T, c client.Client, id string, n int) {
	t.Helper()
	eventually(t, 60*time.Second, "outputs", func() bool {
		v, err := c.QueryWorkflow(ctxT(t, 10*time.Second), id, "", "status")
		if err != nil {
			return false
		}
		var st contract.Status
		if err := v.Get(&st); err != nil {
			t.Fatalf("status does not decode: %v", err)
		}
		if st.Error != nil {
			t.Fatalf("task failed: %+v", st.Error)
		}
		return st.Outputs >= n
	})
}

func sendWith(t *testing.T, c client.Client, id, s string) {
	t.Helper()
	u, err := c.UpdateWorkflow(ctxT(t, 30*time.Second), client.UpdateWorkflowOptions{
		WorkflowID: id, UpdateName: "send", Args: []any{text(s)}, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	require.NoError(t, err)
	var res contract.SendResult
	require.NoError(t, u.Get(ctxT(t, 30*time.Second), &res))
}

func messageTexts(t *testing.T, c client.Client, id string) []string {
	t.Helper()
	v, err := c.QueryWorkflow(ctxT(t, 10*time.Second), id, "", "messages")
	for deadline := time.Now().Add(workflows.MessagesLoadingRetryFor); workflows.IsMessagesLoading(err) && time.Now().Before(deadline); {
		time.Sleep(workflows.MessagesLoadingRetryPause)
		v, err = c.QueryWorkflow(ctxT(t, 10*time.Second), id, "", "messages")
	}
	require.NoError(t, err)
	var ms []contract.Message
	require.NoError(t, v.Get(&ms))
	var out []string
	for _, m := range ms {
		for _, p := range m.Message {
			if p.Text != nil {
				out = append(out, *p.Text)
			}
		}
	}
	return out
}

// payloadKeyIDs counts the history's payloads by encryption key id; a
// payload that is not encrypted, or an event that holds a secret, fails.
// Search attributes and the header are the SDK's own (not the data
// converter's) and are left out.
func payloadKeyIDs(t *testing.T, events []*historypb.HistoryEvent, secrets ...string) map[string]int {
	t.Helper()
	ids := map[string]int{}
	for _, e := range events {
		raw, err := proto.Marshal(e)
		require.NoError(t, err)
		for _, s := range secrets {
			require.False(t, bytes.Contains(raw, []byte(s)), "event %d (%s) holds %q in the clear", e.EventId, e.EventType, s)
		}
		walkPayloads(e.ProtoReflect(), func(path string, p *commonpb.Payload) {
			if strings.Contains(path, "search_attributes") || strings.Contains(path, "header") {
				return
			}
			enc := string(p.Metadata["encoding"])
			require.Equal(t, "binary/encrypted", enc, "event %d (%s) %s: payload encoding %q", e.EventId, e.EventType, path, enc)
			ids[string(p.Metadata["encryption-key-id"])]++
		})
	}
	return ids
}

func walkPayloads(m protoreflect.Message, fn func(path string, p *commonpb.Payload)) {
	walkPayloadsAt("", m, fn)
}

func walkPayloadsAt(path string, m protoreflect.Message, fn func(string, *commonpb.Payload)) {
	if p, ok := m.Interface().(*commonpb.Payload); ok {
		fn(path, p)
		return
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		at := path + "." + string(fd.Name())
		switch {
		case fd.IsList() && fd.Message() != nil:
			for i := 0; i < v.List().Len(); i++ {
				walkPayloadsAt(at, v.List().Get(i).Message(), fn)
			}
		case fd.IsMap() && fd.MapValue().Message() != nil:
			v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
				walkPayloadsAt(at, mv.Message(), fn)
				return true
			})
		case !fd.IsList() && !fd.IsMap() && fd.Message() != nil:
			walkPayloadsAt(at, v.Message(), fn)
		}
		return true
	})
}

// requireAbsent reads every file under dir and fails when one holds a
// secret; each of present must be in some file (so the search is known to
// read what is stored). It returns the files.
func requireAbsent(t *testing.T, dir string, present [][]byte, secrets ...string) []string {
	t.Helper()
	var files []string
	found := make([]bool, len(present))
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // a SQLite journal that came and went
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		files = append(files, p)
		for _, s := range secrets {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("%s holds %q in the clear", p, s)
			}
		}
		for i, want := range present {
			found[i] = found[i] || bytes.Contains(b, want)
		}
		return nil
	})
	require.NoError(t, err)
	for i, ok := range found {
		require.True(t, ok, "no file under %s holds %q: the search reads nothing stored", dir, present[i])
	}
	return files
}

// TestCodecDevStack runs `agentdev run` with AGENT_CODEC_KEYS set: its demo
// task's texts are in neither its database nor its transcripts, its Web UI
// is configured with the Tasks API's /codec, and that codec server answers
// loopback requests without a key and the UI's origin's preflight.
func TestCodecDevStack(t *testing.T) {
	dir := t.TempDir()
	apiAddr := freeAddr(t)
	_, uiPort, err := net.SplitHostPort(freeAddr(t))
	require.NoError(t, err)
	k := randomKey(t)
	cmd := exec.Command(agentdevBinary(t), "run", "--data", dir, "--port", "0", "--ui-port", uiPort, "--nats-port", "-1")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OPENAI_") && !strings.HasPrefix(kv, "AGENT_") && !strings.HasPrefix(kv, "API_KEYS=") && !strings.HasPrefix(kv, "DEVELOPER_KEYS=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, codec.EnvKeys+"=k1:"+base64.StdEncoding.EncodeToString(k), "AGENT_API_ADDR="+apiAddr, "AGENT_LOG_LEVEL=warn")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { stopProcess(cmd) })
	demo := make(chan string, 1)
	var (
		mu      sync.Mutex
		printed strings.Builder
	)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			mu.Lock()
			printed.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if f := strings.Fields(sc.Text()); len(f) >= 3 && f[0] == "Demo" && f[1] == "task" {
				demo <- strings.TrimSuffix(f[2], ",")
			}
		}
	}()
	var demoID string
	select {
	case demoID = <-demo:
	case <-time.After(2 * time.Minute):
		t.Fatalf("no demo task within 2 minutes")
	}

	// The Web UI decodes through the api's codec server.
	resp, err := http.Get("http://127.0.0.1:" + uiPort + "/api/v1/settings")
	require.NoError(t, err)
	var settings struct{ Codec struct{ Endpoint string } }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&settings))
	resp.Body.Close()
	require.Equal(t, "http://"+apiAddr+"/codec", settings.Codec.Endpoint)

	// The codec server: the UI origin's preflight, and a loopback decode
	// without a key of a payload encrypted with the stack's key.
	req, _ := http.NewRequest(http.MethodOptions, "http://"+apiAddr+"/codec/decode", nil)
	req.Header.Set("Origin", "http://localhost:"+uiPort)
	req.Header.Set("Access-Control-Request-Method", "POST")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	require.Equal(t, "http://localhost:"+uiPort, resp.Header.Get("Access-Control-Allow-Origin"))
	c, err := codec.New(codec.Keys{"k1": k}, "k1")
	require.NoError(t, err)
	p, err := c.DataConverter().ToPayload("dev stack decode")
	require.NoError(t, err)
	body, _ := protojson.Marshal(&commonpb.Payloads{Payloads: []*commonpb.Payload{p}})
	resp, err = http.Post("http://"+apiAddr+"/codec/decode", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", answer)
	require.Contains(t, string(answer), base64.StdEncoding.EncodeToString([]byte(`"dev stack decode"`)))

	// The demo's texts are stored encrypted only.
	const demoText = "What can a durable agent task do"
	requireAbsent(t, dir, [][]byte{[]byte(demoID)}, demoText, "if the worker crashes halfway")
	objects := requireAbsent(t, filepath.Join(dir, "transcripts"), nil, demoText)
	require.NotEmpty(t, objects)
	eventually(t, 30*time.Second, "the demo's decoded conversation on stdout", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return strings.Contains(printed.String(), demoText)
	})
}
