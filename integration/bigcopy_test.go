package integration

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"google.golang.org/protobuf/proto"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/testmodel"
	"github.com/agenttask/agenttask/starter"
)

// procKB reads a "VmRSS:"-style field of /proc/<pid>/status, in KiB.
func procKB(t *testing.T, pid int, field string) int {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), field+":") {
			n, err := strconv.Atoi(strings.Fields(sc.Text())[1])
			require.NoError(t, err)
			return n
		}
	}
	t.Fatalf("%s not in /proc/%d/status", field, pid)
	return 0
}

// patternReader yields n bytes of a repeating, non-zero pattern.
type patternReader struct{ left int64 }

func (r *patternReader) Read(p []byte) (int, error) {
	if r.left <= 0 {
		return 0, io.EOF
	}
	n := min(int64(len(p)), r.left)
	for i := range p[:n] {
		p[i] = byte(i*31 + 7)
	}
	r.left -= n
	return int(n), nil
}

// A 1 GiB file moves from a parent task's mount to a delegated child's, on
// local-folder storage, with the worker in its own process: the worker's
// peak RSS stays within 100 MB of its idle RSS, and no history payload of
// the copy exceeds 16 KB.
func TestOneGiBCopyBetweenMountsStreams(t *testing.T) {
	h := newHarness(t)
	proc := startWorkerProcess(t, h)
	parentMount, childMount := h.mountSpec("files"), h.mountSpec("other")
	child := map[string]any{"name": "archivist", "model": "test/child", "mount": childMount}
	parent := map[string]any{"name": "sender", "model": "test/parent", "mount": parentMount,
		"capabilities": []any{map[string]any{"name": "archive", "kind": "delegate", "agent": child}}}
	delegating := func(c testmodel.Call) testmodel.Reply {
		switch {
		case c.Model == "child":
			return testmodel.Reply{Text: `{"message":"archived","attachments":[]}`}
		case hasToolResult(c):
			return testmodel.Reply{Text: `{"message":"the archivist has it","attachments":[]}`}
		default:
			return testmodel.Reply{ToolCalls: []testmodel.ToolCall{{ID: "c1", Name: "archive", Arguments: `{"message":"keep this","files":["task://big.bin"]}`}}}
		}
	}

	// Idle: the worker has started and answered a small task.
	warm := startTask(t, h, "warm-up", map[string]any{"agent": agent("a"), "input": text("hi"), "mode": "single"})
	require.NoError(t, warm.Get(ctxT(t, 30*time.Second), nil))
	h.model.SetHandler(delegating)
	time.Sleep(500 * time.Millisecond)
	idle := procKB(t, proc.Process.Pid, "VmRSS")

	id := "big-sender"
	const size = 1 << 30
	part, err := starter.Upload(ctxT(t, 5*time.Minute), parentMount, id, "big.bin", "application/octet-stream", &patternReader{left: size})
	require.NoError(t, err)
	require.Equal(t, int64(size), *part.SizeBytes)
	start := time.Now()
	run := startTask(t, h, id, map[string]any{"agent": parent,
		"input": map[string]any{"message": []any{map[string]any{"mimeType": "text/plain", "text": "archive this"}, partMap(part)}}})
	eventually(t, 10*time.Minute, "the answer", func() bool {
		v, err := sdk.QueryWorkflow(ctxT(t, 10*time.Second), id, "", "status")
		var st contract.Status
		return err == nil && v.Get(&st) == nil && st.Outputs >= 1
	})
	t.Logf("1 GiB checked, copied and checked again in %s", time.Since(start))
	peak := procKB(t, proc.Process.Pid, "VmHWM")
	t.Logf("worker RSS: idle %d KiB, peak %d KiB (+%d MiB)", idle, peak, (peak-idle)/1024)
	require.Less(t, peak-idle, 100*1024, "peak RSS within 100 MB of idle")

	require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), id, "", "close", nil))
	var res contract.Result
	require.NoError(t, run.Get(ctxT(t, time.Minute), &res))
	copies := 0
	for _, e := range history(t, id, run.GetRunID()) {
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			if e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName() == "CopyFiles" {
				copies++
				require.Less(t, proto.Size(e), 16<<10, "the copy's argument")
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
			require.Less(t, proto.Size(e), 16<<10, "an activity result")
		}
	}
	require.Equal(t, 1, copies)
}
