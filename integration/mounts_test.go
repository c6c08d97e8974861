package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/testmodel"
	"github.com/agenttask/agenttask/starter"
)

// An agent's storage is one the operator listed in AGENT_MOUNTS. A mount URL
// that is not listed, or a listed one with query parameters of the caller's,
// is refused with INVALID_INPUT naming agent.mount: by the Go client before
// anything starts, and by the task itself before any activity but
// DescribeWorker runs. A listed name works end to end, upload included.
func TestMountsComeFromTheOperatorsList(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		return testmodel.Reply{Text: `{"message":"seen","attachments":[]}`}
	})
	elsewhere := "file://" + filepath.ToSlash(t.TempDir())
	sub := agent("helper")
	sub["mount"] = map[string]any{"root": "task", "url": elsewhere}
	withSub := agent("lead")
	withSub["capabilities"] = []any{map[string]any{"name": "help", "kind": "delegate", "description": "asks the helper", "agent": sub}}
	refused := []struct {
		name  string
		spec  map[string]any
		field string
	}{
		{"unlisted url", withMount(agent("a"), map[string]any{"root": "task", "url": elsewhere}), "agent.mount.url"},
		{"listed url, caller's parameters", withMount(agent("a"), map[string]any{"root": "task", "url": h.mounts["files"] + "?metadata=write"}), "agent.mount.url"},
		{"s3 endpoint of the caller's", withMount(agent("a"), map[string]any{"root": "task", "url": "s3://other-tenant?endpoint=http://10.0.0.5"}), "agent.mount.url"},
		{"unknown name", withMount(agent("a"), map[string]any{"root": "task", "name": "secret-bucket"}), "agent.mount.name"},
		{"delegated agent's mount", withSub, "agent.capabilities[0].agent.mount.url"},
	}
	for i, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			// The Go client refuses before anything is started.
			var args contract.StartArgs
			b, _ := json.Marshal(map[string]any{"agent": c.spec, "input": text("hello")})
			require.NoError(t, json.Unmarshal(b, &args))
			id := "mounts-go-" + string(rune('a'+i))
			_, err := h.tasks.Start(ctxT(t, 10*time.Second), args, starter.StartOptions{TaskID: id})
			require.Equal(t, contract.ErrInvalidInput, contract.TypeOf(err), "%v", err)
			require.Contains(t, err.Error(), c.field)
			_, err = sdk.DescribeWorkflowExecution(ctxT(t, 5*time.Second), id, "")
			var nf *serviceerror.NotFound
			require.ErrorAs(t, err, &nf, "nothing was started")

			// Started around the client, the task refuses itself.
			rawID := "mounts-raw-" + string(rune('a'+i))
			before := h.model.CallCount()
			run := startTask(t, h, rawID, map[string]any{"agent": c.spec, "input": text("hello")})
			err = run.Get(ctxT(t, 30*time.Second), nil)
			require.Equal(t, contract.ErrInvalidInput, errType(err), "%v", err)
			require.Contains(t, err.Error(), c.field)
			var activities []string
			for _, e := range history(t, rawID, "") {
				if e.GetEventType() == enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED {
					activities = append(activities, e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName())
				}
			}
			require.Equal(t, []string{"DescribeWorker"}, activities, "no storage or model activity ran")
			require.Equal(t, before, h.model.CallCount())
		})
	}

	// A listed name, end to end: upload by name with the starter, then the
	// model sees the file read from that mount.
	f := filepath.Join(t.TempDir(), "cat.png")
	require.NoError(t, os.WriteFile(f, pngBytes, 0o644))
	out, stderr, code := cli(t, h, "upload", "named-mount", f, "--mount", "files")
	require.Equal(t, 0, code, stderr)
	var part map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &part), out)
	require.Equal(t, "task://cat.png", part["file"])
	spec := withMount(agent("viewer"), map[string]any{"root": "task", "name": "files"})
	run := startTask(t, h, "named-mount", map[string]any{"agent": spec, "mode": "single",
		"input": map[string]any{"message": []any{map[string]any{"mimeType": "text/plain", "text": "look"}, part}}})
	require.NoError(t, run.Get(ctxT(t, 30*time.Second), nil))
	recordHistory(t, "named-mount", "", "named-mount")
	last := h.model.Calls()[h.model.CallCount()-1]
	var images []string
	for _, m := range last.Messages {
		images = append(images, m.Images...)
	}
	require.Equal(t, []string{dataURLOf("image/png", pngBytes)}, images)
	dir := strings.TrimPrefix(h.mounts["files"], "file://")
	_, err := os.Stat(filepath.Join(dir, "tasks", "named-mount", "files", "cat.png"))
	require.NoError(t, err, "uploaded into the named mount's folder")
	out, stderr, code = cli(t, h, "upload", "named-mount", f, "--mount", "nope")
	require.NotEqual(t, 0, code)
	require.Contains(t, out+stderr, "not a mount of this deployment")
}

func withMount(spec map[string]any, m map[string]any) map[string]any {
	spec["mount"] = m
	return spec
}
