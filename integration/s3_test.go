package integration

// Object storage over its protocol (docs/storage-s3.md): transcripts and
// mounts on s3:// URLs served by an S3-protocol server in this process
// (gofakes3 over its in-memory backend, on a loopback listener), shared by
// two worker processes that reach it as they would reach Amazon S3 or MinIO:
// through gocloud's s3blob driver and the AWS SDK, with credentials from the
// environment. docs/storage-s3.md describes the configuration.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/stretchr/testify/require"
	"gocloud.dev/blob"
	_ "gocloud.dev/blob/s3blob" // s3://

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/blobkey"
	"github.com/agenttask/agenttask/internal/mount"
	"github.com/agenttask/agenttask/internal/testmodel"
	"github.com/agenttask/agenttask/internal/transcript"
	"github.com/agenttask/agenttask/starter"
)

// fakeS3 is an S3-protocol server of this test process.
type fakeS3 struct {
	endpoint string // http://127.0.0.1:PORT
}

// startFakeS3 serves gofakes3's in-memory backend on a loopback port with
// the given buckets, and sets the AWS SDK's environment (credentials the
// fake accepts, a region, no instance metadata lookups) for this process and,
// through workerEnv's os.Environ, for the worker processes it starts.
func startFakeS3(t *testing.T, buckets ...string) *fakeS3 {
	t.Helper()
	backend := s3mem.New()
	for _, b := range buckets {
		require.NoError(t, backend.CreateBucket(b))
	}
	srv := httptest.NewServer(gofakes3.New(backend, gofakes3.WithLogger(gofakes3.DiscardLog())).Server())
	t.Cleanup(srv.Close)
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID":         "agenttask-test",
		"AWS_SECRET_ACCESS_KEY":     "agenttask-test-secret",
		"AWS_REGION":                "us-east-1",
		"AWS_EC2_METADATA_DISABLED": "true",
		// The fake stores no checksums: validate responses only when asked,
		// or the SDK logs every read it could not validate.
		"AWS_RESPONSE_CHECKSUM_VALIDATION": "when_required",
	} {
		t.Setenv(k, v)
	}
	return &fakeS3{endpoint: srv.URL}
}

// url is the bucket's s3:// URL for gocloud's s3blob: the endpoint, a region
// and path-style addressing (http://127.0.0.1:PORT/bucket/key, as MinIO is
// usually reached).
func (s *fakeS3) url(bucket string) string {
	q := url.Values{"endpoint": {s.endpoint}, "region": {"us-east-1"}, "use_path_style": {"true"}}
	return "s3://" + bucket + "?" + q.Encode()
}

// keys lists the objects under prefix in bucket, over the protocol.
func (s *fakeS3) keys(t *testing.T, bucket, prefix string) []string {
	t.Helper()
	ctx := ctxT(t, 30*time.Second)
	b, err := blob.OpenBucket(ctx, s.url(bucket))
	require.NoError(t, err)
	defer b.Close()
	var out []string
	it := b.List(&blob.ListOptions{Prefix: prefix})
	for {
		o, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		out = append(out, o.Key)
	}
}

// newS3Harness is newHarness with the transcript and both mounts ("files",
// "other") in buckets of a fake S3 server of its own.
func newS3Harness(t *testing.T) (*harness, *fakeS3) {
	t.Helper()
	s3 := startFakeS3(t, "transcripts", "files", "other")
	h := newHarness(t)
	h.transcript = s3.url("transcripts")
	h.mounts = mount.Mounts{"files": s3.url("files"), "other": s3.url("other")}
	h.tasks = starter.New(sdk, h.queue).CheckMounts(h.mounts)
	return h, s3
}

// The project's stores, alone, over the fake: transcript entries are written
// once (a rewrite of the same entry succeeds, a different one is refused
// through S3's conditional put), a mount upload larger than one multipart
// part is stat'ed and copied into another bucket with its sha256 checked.
func TestS3Stores(t *testing.T) {
	s3 := startFakeS3(t, "transcripts", "files", "other")
	ctx := ctxT(t, time.Minute)

	ts, err := transcript.Open(ctx, s3.url("transcripts"))
	require.NoError(t, err)
	defer ts.Close()
	k := transcript.Key{TaskID: "s3-unit", FirstRunID: "run-1"}
	entry := func(s string) contract.Message {
		return contract.Message{Type: contract.TypeInput, TaskIO: textIO(s)}
	}
	require.NoError(t, ts.Write(ctx, k, 0, []contract.Message{entry("one"), entry("two")}))
	fresh, err := transcript.Open(ctx, s3.url("transcripts")) // no cache: the server decides
	require.NoError(t, err)
	defer fresh.Close()
	require.NoError(t, fresh.Write(ctx, k, 1, []contract.Message{entry("two")}), "the same entry again")
	err = fresh.Write(ctx, k, 1, []contract.Message{entry("other")})
	require.ErrorIs(t, err, transcript.ErrConflict)
	got, err := fresh.Read(ctx, k, 0, 2)
	require.NoError(t, err)
	require.Equal(t, []string{"one", "two"}, texts(got))
	require.Equal(t, []string{"tasks/s3-unit/run-1/entries/0000000000.json", "tasks/s3-unit/run-1/entries/0000000001.json"},
		s3.keys(t, "transcripts", "tasks/"))

	ms := mount.NewStore()
	defer ms.Close()
	files := mount.Spec{Root: "task", URL: s3.url("files")}
	other := mount.Spec{Root: "task", URL: s3.url("other")}
	data := bytes.Repeat([]byte("0123456789abcdef"), (6<<20)/16+5) // over one 5 MiB part
	part, up, err := ms.Upload(ctx, files, "unit", "big.bin", "application/octet-stream", bytes.NewReader(data))
	require.NoError(t, err)
	require.Equal(t, "task://big.bin", *part.File)
	require.Equal(t, int64(len(data)), *part.SizeBytes)
	st, err := ms.Stat(ctx, files, "unit", "big.bin", nil)
	require.NoError(t, err)
	require.Equal(t, up.SHA256, st.SHA256)
	cp, err := ms.Copy(ctx, files, "unit", st, other, "unit-copy", "in/big.bin", nil)
	require.NoError(t, err)
	require.Equal(t, st.SHA256, cp.SHA256)
	r, err := ms.Open(ctx, other, "unit-copy", "in/big.bin")
	require.NoError(t, err)
	back, err := io.ReadAll(r)
	require.NoError(t, r.Close())
	require.NoError(t, err)
	require.True(t, bytes.Equal(data, back), "the copy reads back whole")
	require.Equal(t, []string{"tasks/unit-copy/files/in/big.bin"}, s3.keys(t, "other", "tasks/"))
}

// s3Reply answers as an agent with a mount does (a JSON message with
// attachments): "echo: " and the first line of the last message; when that
// message shows an image, the answer attaches task://cat.png.
func s3Reply(c testmodel.Call) testmodel.Reply {
	last := c.Messages[len(c.Messages)-1]
	first, _, _ := strings.Cut(last.Content, "\n")
	attach := "[]"
	if len(last.Images) > 0 {
		attach = `["task://cat.png"]`
	}
	return testmodel.Reply{Text: fmt.Sprintf(`{"message":%q,"attachments":%s}`, "echo: "+first, attach)}
}

// A conversation whose transcript and files are on S3, served by worker
// processes that share it. It opens with a file uploaded to the "files"
// mount and sent by reference: checked on arrival (size and sha256), shown
// to the model, answered with an attachment. Worker A serves the first
// turns alone; worker B starts; A is SIGKILLed in the middle of a model call
// and B answers it, its request showing the whole conversation (the image
// included), read from the objects A wrote; a replacement worker joins and
// the turns go on through continue-as-new. The messages of every run read
// back complete and in order, and every entry is an object in the bucket.
func TestS3ConversationSharedByTwoWorkerProcesses(t *testing.T) {
	start := time.Now()
	h, s3 := newS3Harness(t)
	h.model.SetHandler(s3Reply)
	a := startWorkerProcess(t, h)

	id := "s3-conversation"
	files := h.mountSpec("files")
	cat := upload(t, files, id, "cat.png", "image/png", pngBytes)
	spec := withMount(agent("viewer"), map[string]any{"root": "task", "name": "files"})
	startTask(t, h, id, map[string]any{"agent": spec, "continueAsNewEvents": 100,
		"input": map[string]any{"message": []any{map[string]any{"mimeType": "text/plain", "text": "look"}, partMap(cat)}}})
	waitOutputs(t, id, 1)
	want := []string{"look", "echo: look"}
	image := dataURLOf("image/png", pngBytes)
	require.Equal(t, []string{image}, h.model.Calls()[0].Messages[len(h.model.Calls()[0].Messages)-1].Images, "the model was shown the file")

	turn := func(s string) {
		t.Helper()
		_, err := sendUpdate(t, id, text(s))
		require.NoError(t, err)
		want = append(want, s, "echo: "+s)
		waitOutputs(t, id, len(want)/2)
	}
	for i := 1; i <= 3; i++ {
		turn(fmt.Sprint("m", i))
	}

	// B joins; the worker holding the next model call (A, as a rule: the
	// call follows its workflow task there) dies; the other answers it
	// after the call's heartbeat timeout.
	b := startWorkerProcess(t, h)
	h.model.Hold()
	calls := h.model.CallCount()
	require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), id, "", "input", text("during the crash")))
	want = append(want, "during the crash", "echo: during the crash")
	require.NoError(t, h.model.WaitForCalls(ctxT(t, time.Minute), calls+1))
	require.Equal(t, contract.StateWorking, status(t, id).State)
	holder := callHolder(t, id, a, b)
	t.Logf("killing the worker holding the call (pid %d; A is %d)", holder.Process.Pid, a.Process.Pid)
	killed := time.Now()
	require.NoError(t, holder.Process.Kill()) // SIGKILL
	_ = holder.Wait()
	h.model.Release()
	waitOutputsWithin(t, id, len(want)/2, 3*time.Minute) // the held call ends by its 30 s heartbeat timeout first
	t.Logf("the killed worker's call answered by the other %s after the kill", time.Since(killed).Round(time.Second))
	retried := h.model.Calls()[h.model.CallCount()-1]
	var seen, images []string
	for _, m := range retried.Messages[1:] { // after the instructions
		c, _, _ := strings.Cut(m.Content, "\n")
		seen = append(seen, c)
		images = append(images, m.Images...)
	}
	require.Equal(t, want[:len(want)-1], seen, "the surviving worker read the whole conversation from S3")
	require.Equal(t, []string{image}, images, "and the file from the mount")

	// A replacement joins: two workers again, through continue-as-new.
	startWorkerProcess(t, h)
	for i := 4; status(t, id).Run < 2 || i < 12; i++ {
		require.Less(t, i, 40, "the task never continued as new")
		turn(fmt.Sprint("m", i))
	}
	turn("after continuing")

	msgs := messages(t, id, nil)
	require.Equal(t, want, texts(msgs), "every run's messages, complete and in order")
	requireSeedOrder(t, msgs)
	in := msgs[0].Message[1]
	require.Equal(t, "task://cat.png", *in.File)
	require.Equal(t, int64(len(pngBytes)), *in.SizeBytes, "checked on arrival: the size")
	require.Contains(t, string(in.Metadata), `"sha256"`, "and the sha256")
	out := msgs[1].Message
	require.Len(t, out, 2, "the answer and its attachment")
	require.Equal(t, "task://cat.png", *out[1].File)
	require.Equal(t, int64(len(pngBytes)), *out[1].SizeBytes)

	st := status(t, id)
	require.GreaterOrEqual(t, st.Run, 2, "the conversation continued as new")
	// Every entry is an object of the transcript bucket; the last answer is
	// still its turn's pending object (an entry once the next turn starts).
	var entries []string
	pending := false
	keys := s3.keys(t, "transcripts", "tasks/"+id+"/")
	for _, k := range keys {
		if strings.Contains(k, "/entries/") {
			entries = append(entries, k)
		}
		pending = pending || strings.HasSuffix(k, fmt.Sprintf("/stash/pending-%010d-turn-%d.json", len(msgs)-1, len(want)/2))
	}
	require.Len(t, entries, len(msgs)-1, "one object per entry, in the transcript bucket: %v", keys)
	require.True(t, pending, "the last answer's pending object: %v", keys)
	require.Equal(t, []string{"tasks/" + id + "/files/cat.png"}, s3.keys(t, "files", "tasks/"+id+"/"))

	require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), id, "", "close", nil))
	var res contract.Result
	require.NoError(t, sdk.GetWorkflow(ctxT(t, time.Minute), id, "").Get(ctxT(t, time.Minute), &res))
	require.Equal(t, len(want)/2, res.Turns)
	require.Greater(t, h.model.CallCount(), res.Turns, "the killed call was asked again")
	t.Logf("%d turns over %d runs in %s", res.Turns, st.Run, time.Since(start).Round(time.Second))
}

// callHolder is the worker process running the task's pending activity,
// by the pid that starts its identity (the SDK's default, PID@host@).
func callHolder(t *testing.T, id string, workers ...*exec.Cmd) *exec.Cmd {
	t.Helper()
	var holder *exec.Cmd
	eventually(t, time.Minute, "the call's worker", func() bool {
		d, err := sdk.DescribeWorkflowExecution(ctxT(t, 5*time.Second), id, "")
		if err != nil {
			return false
		}
		for _, pa := range d.GetPendingActivities() {
			for _, w := range workers {
				if strings.HasPrefix(pa.GetLastWorkerIdentity(), fmt.Sprintf("%d@", w.Process.Pid)) {
					holder = w
					return true
				}
			}
		}
		return false
	})
	return holder
}

// A parent on the "files" bucket delegates to a child on the "other"
// bucket, both served by two worker processes: the file goes to the child's
// space in the other bucket, the child's attachment comes back into the
// parent's, and both model requests show the image read from there.
func TestS3DelegateCopiesBetweenBuckets(t *testing.T) {
	start := time.Now()
	h, s3 := newS3Harness(t)
	startWorkerProcess(t, h)
	startWorkerProcess(t, h)
	child := map[string]any{"name": "painter", "model": "test/child", "mount": map[string]any{"root": "task", "name": "other"}}
	parent := map[string]any{"name": "boss", "model": "test/parent", "mount": map[string]any{"root": "task", "name": "files"},
		"capabilities": []any{map[string]any{"name": "paint", "kind": "delegate", "agent": child}}}
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		switch {
		case c.Model == "child":
			return testmodel.Reply{Text: `{"message":"here is your picture","attachments":["task://cat.png"]}`}
		case hasToolResult(c):
			return testmodel.Reply{Text: `{"message":"done: the picture is back","attachments":[]}`}
		default:
			return testmodel.Reply{ToolCalls: []testmodel.ToolCall{{ID: "call_1", Name: "paint", Arguments: `{"message":"paint this again","files":["task://cat.png"]}`}}}
		}
	})
	id := "s3-boss"
	part := upload(t, h.mountSpec("files"), id, "cat.png", "image/png", pngBytes)
	startTask(t, h, id, map[string]any{"agent": parent,
		"input": map[string]any{"message": []any{map[string]any{"mimeType": "text/plain", "text": "get this painted"}, partMap(part)}}})
	st := waitOutputs(t, id, 1)
	require.Nil(t, st.Error)
	msgs := messages(t, id, nil)
	require.Contains(t, *msgs[len(msgs)-1].Message[0].Text, "the picture is back")

	image := dataURLOf("image/png", pngBytes)
	var childShown, parentShown bool
	for _, c := range h.model.Calls() {
		for _, m := range c.Messages {
			for _, img := range m.Images {
				if img == image {
					childShown = childShown || c.Model == "child"
					parentShown = parentShown || (c.Model == "parent" && hasToolResult(c))
				}
			}
		}
	}
	require.True(t, childShown, "the child was shown its copy")
	require.True(t, parentShown, "the parent was shown the image that came back")

	childID := id + ".paint.t1.c0"
	require.Equal(t, []string{"tasks/" + blobkey.Segment(childID) + "/files/cat.png"}, s3.keys(t, "other", "tasks/"), "the copy into the child's space, in the other bucket")
	back := s3.keys(t, "files", "tasks/"+id+"/files/")
	require.Len(t, back, 2, "the original and the copy that came back: %v", back)
	require.Contains(t, back, "tasks/"+id+"/files/cat.png")
	var childRes contract.Result
	require.NoError(t, sdk.GetWorkflow(ctxT(t, 10*time.Second), childID, "").Get(ctxT(t, 10*time.Second), &childRes))
	require.Equal(t, contract.EndedBySingle, childRes.EndedBy)
	closeAndWait(t, id)
	t.Logf("delegation over S3 in %s", time.Since(start).Round(time.Second))
}

// Over S3, with two worker processes: a reference to a missing object is
// refused to the caller (FILE_NOT_FOUND) and nothing is queued; an object
// replaced after it was referenced by one of the same size (told apart by
// its MD5/ETag alone) fails the next request with FILE_CHANGED.
func TestS3FilesCheckedOnArrival(t *testing.T) {
	h, _ := newS3Harness(t)
	startWorkerProcess(t, h)
	startWorkerProcess(t, h)
	h.model.SetHandler(s3Reply)
	files := h.mountSpec("files")
	id := "s3-checked"
	spec := withMount(agent("looker"), map[string]any{"root": "task", "name": "files"})
	run := startTask(t, h, id, map[string]any{"agent": spec})
	part := upload(t, files, id, "cat.png", "image/png", pngBytes)
	_, err := sendUpdate(t, id, map[string]any{"message": []any{map[string]any{"mimeType": "text/plain", "text": "what is this?"}, partMap(part)}})
	require.NoError(t, err)
	waitOutputs(t, id, 1)

	_, err = sendUpdate(t, id, map[string]any{"message": []any{map[string]any{"mimeType": "image/png", "file": "task://nope.png"}}})
	require.Equal(t, "FILE_NOT_FOUND", errType(err), "%v", err)
	require.Len(t, messages(t, id, nil), 2, "nothing queued")

	same := bytes.Clone(pngBytes)
	same[len(same)-1]++
	upload(t, files, id, "cat.png", "image/png", same)
	require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), id, "", "input", text("and now?")))
	err = run.Get(ctxT(t, 60*time.Second), nil)
	require.Equal(t, "FILE_CHANGED", errType(err), "%v", err)
}
