package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/mocks"
	"go.temporal.io/sdk/temporal"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/workflows"
	"github.com/agenttask/agenttask/starter"
)

const agentJSON = `{"name": "helper", "model": "openai/gpt-4o-mini"}`

type run struct {
	code           int
	stdout, stderr string
	dialed         *client.Options
}

// errJSON is the error the command wrote to stderr (its first line).
func (r run) errJSON(t *testing.T) contract.Error {
	t.Helper()
	line, _, _ := strings.Cut(r.stderr, "\n")
	var e struct {
		Error contract.Error `json:"error"`
	}
	if err := json.Unmarshal([]byte(line), &e); err != nil || e.Error.Type == "" {
		t.Fatalf("stderr does not start with a JSON error: %q", r.stderr)
	}
	return e.Error
}

func (r run) wantError(t *testing.T, code int, typ, contains string) contract.Error {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit %d, want %d; stderr %s", r.code, code, r.stderr)
	}
	if r.stdout != "" {
		t.Errorf("stdout %q, want nothing", r.stdout)
	}
	e := r.errJSON(t)
	if e.Type != typ || !strings.Contains(e.Message, contains) {
		t.Fatalf("error %+v, want type %s and a message holding %q", e, typ, contains)
	}
	return e
}

func (r run) wantOK(t *testing.T, out any) {
	t.Helper()
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit %d, stderr %s", r.code, r.stderr)
	}
	if err := json.Unmarshal([]byte(r.stdout), out); err != nil {
		t.Fatalf("stdout is not the JSON wanted: %v\n%s", err, r.stdout)
	}
}

// runCLI runs the command against m (nil: dialing fails the test).
func runCLI(t *testing.T, m *mocks.Client, env map[string]string, stdin string, args ...string) run {
	t.Helper()
	var r run
	dial := func(o client.Options) (client.Client, error) {
		if m == nil {
			t.Fatalf("the command dialed Temporal for %q", args)
		}
		r.dialed = &o
		m.On("Close").Return().Once()
		return m, nil
	}
	var stdout, stderr bytes.Buffer
	getenv := func(k string) string { return env[k] }
	r.code = mainWith(ctx, args, strings.NewReader(stdin), &stdout, &stderr, getenv, dial)
	r.stdout, r.stderr = stdout.String(), stderr.String()
	return r
}

// expectStart records the options and argument of the start.
func expectStart(t *testing.T, m *mocks.Client, opts *client.StartWorkflowOptions, args *workflows.StartArgs) {
	m.On("ExecuteWorkflow", mock.Anything, mock.Anything, contract.WorkflowType, mock.Anything).
		Run(func(a mock.Arguments) {
			*opts = a.Get(1).(client.StartWorkflowOptions)
			*args = a.Get(3).(workflows.StartArgs)
		}).Return(mocks.NewWorkflowRun(t), nil).Once()
}

func TestUsage(t *testing.T) {
	r := runCLI(t, nil, nil, "")
	if r.code != 2 || r.stdout != "" || !strings.HasPrefix(r.stderr, "usage: starter") {
		t.Errorf("no args: exit %d, stdout %q, stderr %.40q", r.code, r.stdout, r.stderr)
	}
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}, {"status", "--help"}} {
		r := runCLI(t, nil, nil, "", args...)
		if r.code != 0 || r.stderr != "" || !strings.HasPrefix(r.stdout, "usage: starter") {
			t.Errorf("%q: exit %d, stdout %.40q, stderr %q", args, r.code, r.stdout, r.stderr)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"launch"}, `unknown command "launch"`},
		{[]string{"--bogus", "status", "t1"}, "unknown flag --bogus"},
		{[]string{"status"}, "TASK_ID is missing"},
		{[]string{"status", "t1", "t2"}, "unexpected arguments"},
		{[]string{"status", "t1", "--after", "3"}, "unknown flag --after"},
		{[]string{"start"}, "--agent is required"},
		{[]string{"start", "--agent"}, "needs a value"},
		{[]string{"start", "--agent", agentJSON, "hello"}, "unexpected arguments"},
		{[]string{"start", "--agent", agentJSON, "--input", "a", "--input-json", "{}"}, "not both"},
		{[]string{"start", "--args", "{}", "--mode", "single"}, "--args holds the whole start argument"},
		{[]string{"send", "t1"}, "TEXT (or --json) is missing"},
		{[]string{"send", "t1", "hello", "there"}, "quote it"},
		{[]string{"send", "t1", "hello", "--json", "{}"}, "not both"},
		{[]string{"send", "t1", "hi", "--signal=maybe"}, "invalid boolean"},
		{[]string{"messages", "t1", "--all", "--after", "2"}, "--all"},
		{[]string{"messages", "t1", "--limit", "-1"}, "must not be negative"},
		{[]string{"messages", "t1", "--after", "x"}, "invalid value"},
	}
	for _, tc := range cases {
		r := runCLI(t, nil, nil, "", tc.args...)
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r.wantError(t, 2, ErrUsage, tc.want)
		})
	}
	// An unknown command also prints the usage.
	if r := runCLI(t, nil, nil, "", "launch"); !strings.Contains(r.stderr, "\nusage: starter") {
		t.Errorf("no usage after an unknown command: %q", r.stderr)
	}
}

func TestStartRefusesBadInputWithoutDialing(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"start", "--agent", `{"name": "helper", `}, "--agent: not an agent object"},
		{[]string{"start", "--agent", `{"name": "helper", "model": "a/b", "colour": "red"}`}, `unknown field "colour"`},
		{[]string{"start", "--agent", "no-such-file.json"}, `"no-such-file.json" is neither inline JSON`},
		{[]string{"start", "--agent", `{"name": "Helper", "model": "a/b"}`}, "agent.name"},
		{[]string{"start", "--agent", `{"name": "helper", "model": "gpt"}`}, "agent.model"},
		{[]string{"start", "--agent", agentJSON, "--mode", "forever"}, "mode"},
		{[]string{"start", "--agent", agentJSON, "--idle-timeout", "5"}, "idleTimeout"},
		{[]string{"start", "--agent", agentJSON, "--input-json", `{"message": "hi"}`}, "--input-json: not a TaskIO"},
		{[]string{"start", "--agent", agentJSON, "--input-json", `{"message": [{"mimeType": "text/plain", "text": "hi"}], "city": "Paris"}`}, "declares no parameters"},
		{[]string{"start", "--agent", agentJSON, "--task-id", "a b"}, "task ID"},
		{[]string{"start", "--args", `{"agent": {"name": "helper", "model": "a/b"}, "mood": "x"}`}, `unknown field "mood"`},
		{[]string{"start", "--args", `{"agent": {"name": "helper", "model": "a/b"}, "carry": {"run": 1}}`}, "carry is written by the runtime"},
	}
	for _, tc := range cases {
		r := runCLI(t, nil, nil, "", tc.args...)
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r.wantError(t, 1, contract.ErrInvalidInput, tc.want)
		})
	}
}

func TestStartPrintsTheTaskID(t *testing.T) {
	m := mocks.NewClient(t)
	var opts client.StartWorkflowOptions
	var args workflows.StartArgs
	expectStart(t, m, &opts, &args)

	env := map[string]string{"TEMPORAL_ADDRESS": "env-host:7233", "TEMPORAL_NAMESPACE": "env-ns", EnvTaskQueue: "env-queue"}
	r := runCLI(t, m, env, "",
		"--address", "flag-host:7233", "start", "--agent", agentJSON, "--input", "Hello",
		"--mode", "single", "--task-id", "t1", "--idle-timeout=30m", "--task-queue", "flag-queue")
	var out map[string]string
	r.wantOK(t, &out)
	if len(out) != 1 || out["task_id"] != "t1" {
		t.Fatalf("stdout %s", r.stdout)
	}
	if r.dialed.HostPort != "flag-host:7233" || r.dialed.Namespace != "env-ns" || r.dialed.Logger == nil {
		t.Errorf("dialed %s in %s (logger %v)", r.dialed.HostPort, r.dialed.Namespace, r.dialed.Logger)
	}
	if opts.ID != "t1" || opts.TaskQueue != "flag-queue" || opts.StaticSummary != "agent helper · openai/gpt-4o-mini · single" {
		t.Errorf("start options %+v", opts)
	}
	if args.Mode != contract.ModeSingle || args.IdleTimeout != "30m" || args.Input == nil || *args.Input.Message[0].Text != "Hello" {
		t.Errorf("start argument %+v", args)
	}
}

func TestStartFromFilesAndStdin(t *testing.T) {
	dir := t.TempDir()
	agentFile := filepath.Join(dir, "agent.json")
	if err := os.WriteFile(agentFile, []byte(agentJSON), 0o600); err != nil {
		t.Fatal(err)
	}
	m := mocks.NewClient(t)
	var opts client.StartWorkflowOptions
	var args workflows.StartArgs

	expectStart(t, m, &opts, &args)
	r := runCLI(t, m, map[string]string{EnvTaskQueue: "env-queue"}, `{"message": [{"mimeType": "text/plain", "text": "from stdin"}]}`,
		"start", "--agent", agentFile, "--input-json", "-")
	var out map[string]string
	r.wantOK(t, &out)
	if !strings.HasPrefix(out["task_id"], "task-") || opts.ID != out["task_id"] || opts.TaskQueue != "env-queue" {
		t.Errorf("task %q, options %+v", out["task_id"], opts)
	}
	if args.Agent.Name != "helper" || *args.Input.Message[0].Text != "from stdin" || args.Mode != contract.ModeConversation {
		t.Errorf("start argument %+v", args)
	}
	if r.dialed.HostPort != "localhost:7233" || r.dialed.Namespace != "default" {
		t.Errorf("dialed %s in %s", r.dialed.HostPort, r.dialed.Namespace)
	}

	expectStart(t, m, &opts, &args)
	whole := `{"agent": ` + agentJSON + `, "mode": "single", "continueAsNewEvents": 500}`
	r = runCLI(t, m, nil, whole, "start", "--args", "-", "--task-id", "t2")
	r.wantOK(t, &out)
	if out["task_id"] != "t2" || opts.TaskQueue != contract.DefaultTaskQueue || args.ContinueAsNewEvents != 500 || args.Input != nil {
		t.Errorf("task %q, queue %q, argument %+v", out["task_id"], opts.TaskQueue, args)
	}
}

func TestStartExistingTask(t *testing.T) {
	m := mocks.NewClient(t)
	m.On("ExecuteWorkflow", mock.Anything, mock.Anything, contract.WorkflowType, mock.Anything).
		Return(nil, serviceerror.NewWorkflowExecutionAlreadyStarted("already running", "", "r1")).Once()
	runCLI(t, m, nil, "", "start", "--agent", agentJSON, "--task-id", "t1").wantError(t, 1, starter.ErrTaskExists, `"t1"`)
}

func TestDialFailure(t *testing.T) {
	var stdout, stderr bytes.Buffer
	dial := func(client.Options) (client.Client, error) { return nil, errors.New("connection refused") }
	code := mainWith(ctx, []string{"status", "t1"}, strings.NewReader(""), &stdout, &stderr, func(string) string { return "" }, dial)
	r := run{code: code, stdout: stdout.String(), stderr: stderr.String()}
	r.wantError(t, 1, ErrUnavailable, "localhost:7233")
}

func TestSendCommand(t *testing.T) {
	m := mocks.NewClient(t)
	var sent []contract.TaskIO
	h := mocks.NewWorkflowUpdateHandle(t)
	h.On("Get", mock.Anything, mock.Anything).Return(func(_ context.Context, ptr any) error {
		*ptr.(*contract.SendResult) = contract.SendResult{ReceivedAt: "2026-01-02T03:04:05.000000Z"}
		return nil
	})
	m.On("UpdateWorkflow", mock.Anything, mock.Anything).
		Run(func(a mock.Arguments) {
			sent = append(sent, a.Get(1).(client.UpdateWorkflowOptions).Args[0].(contract.TaskIO))
		}).
		Return(h, nil)

	var res contract.SendResult
	runCLI(t, m, nil, "", "send", "t1", "hello").wantOK(t, &res)
	if res.ReceivedAt != "2026-01-02T03:04:05.000000Z" {
		t.Errorf("result %+v", res)
	}
	runCLI(t, m, nil, "", "send", "t1", "--", "-dash").wantOK(t, &res)
	runCLI(t, m, nil, "piped text", "send", "t1", "-").wantOK(t, &res)
	runCLI(t, m, nil, "", "send", "t1", "--json", `{"message": [{"mimeType": "text/plain", "text": "json"}], "city": "Paris"}`).wantOK(t, &res)
	if len(sent) != 4 || *sent[0].Message[0].Text != "hello" || *sent[1].Message[0].Text != "-dash" ||
		*sent[2].Message[0].Text != "piped text" || *sent[3].Message[0].Text != "json" || string(sent[3].Values["city"]) != `"Paris"` {
		t.Fatalf("sent %+v", sent)
	}
}

func TestSendRefused(t *testing.T) {
	m := mocks.NewClient(t)
	h := mocks.NewWorkflowUpdateHandle(t)
	h.On("Get", mock.Anything, mock.Anything).Return(temporal.NewApplicationError("TASK_CLOSED: the task is closing", "Error"))
	m.On("UpdateWorkflow", mock.Anything, mock.Anything).Return(h, nil)
	e := runCLI(t, m, nil, "", "send", "t1", "hello").wantError(t, 1, contract.ErrTaskClosed, "the task is closing")
	if e.Message != "the task is closing" {
		t.Errorf("message %q", e.Message)
	}
}

func TestSignalCommands(t *testing.T) {
	m := mocks.NewClient(t)
	m.On("SignalWorkflow", mock.Anything, "t1", "", contract.SignalInput, mock.MatchedBy(func(in contract.TaskIO) bool {
		return *in.Message[0].Text == "hi"
	})).Return(nil).Once()
	m.On("SignalWorkflow", mock.Anything, "t1", "", contract.SignalClose, nil).Return(nil).Once()
	m.On("SignalWorkflow", mock.Anything, "t1", "", contract.SignalCancelTurn, nil).Return(nil).Once()
	for _, args := range [][]string{{"send", "t1", "--signal", "hi"}, {"close", "t1"}, {"cancel-turn", "t1"}} {
		var out map[string]bool
		runCLI(t, m, nil, "", args...).wantOK(t, &out)
		if !out["signaled"] {
			t.Errorf("%q printed %v", args, out)
		}
	}
}

func TestQueryCommands(t *testing.T) {
	m := mocks.NewClient(t)
	m.On("QueryWorkflow", mock.Anything, "t1", "", contract.QueryStatus).
		Return(jsonValue(t, contract.Status{State: contract.StateWorking, Turns: 3, Messages: 2}), nil)
	entries := []contract.Message{
		{Type: contract.TypeInput, TaskIO: contract.TaskIO{Message: []contract.ContentPart{contract.TextPart("q")}}},
		{Type: contract.TypeOutput, TaskIO: contract.TaskIO{Message: []contract.ContentPart{contract.TextPart("a")}}},
	}
	m.On("QueryWorkflow", mock.Anything, "t1", "", contract.QueryMessages).Return(jsonValue(t, entries), nil).Once()
	m.On("QueryWorkflow", mock.Anything, "t1", "", contract.QueryMessages, contract.MessagesPage{After: 1, Limit: 1}).Return(jsonValue(t, entries[1:]), nil).Once()
	m.On("QueryWorkflow", mock.Anything, "t1", "", contract.QueryMessages, contract.MessagesPage{After: 0}).Return(jsonValue(t, entries), nil).Once()
	m.On("QueryWorkflow", mock.Anything, "t1", "", contract.QueryMessages, contract.MessagesPage{After: 2}).Return(jsonValue(t, []contract.Message{}), nil).Once()

	var st contract.Status
	runCLI(t, m, nil, "", "status", "t1").wantOK(t, &st)
	if st.State != contract.StateWorking || st.Turns != 3 {
		t.Errorf("status %+v", st)
	}
	for _, tc := range []struct {
		args []string
		n    int
	}{{[]string{"messages", "t1"}, 2}, {[]string{"messages", "--after", "1", "t1", "--limit=1"}, 1}, {[]string{"messages", "t1", "--all"}, 2}} {
		var got []map[string]any
		r := runCLI(t, m, nil, "", tc.args...)
		r.wantOK(t, &got)
		if len(got) != tc.n || got[len(got)-1]["type"] != "output" {
			t.Errorf("%q printed %s", tc.args, r.stdout)
		}
	}
}

func TestResultCommand(t *testing.T) {
	m := mocks.NewClient(t)
	wr := mocks.NewWorkflowRun(t)
	wr.On("Get", mock.Anything, mock.Anything).Return(func(_ context.Context, ptr any) error {
		*ptr.(*contract.Result) = contract.Result{State: contract.StateCompleted, Turns: 1, EndedBy: contract.EndedByClose}
		return nil
	}).Once()
	wr.On("Get", mock.Anything, mock.Anything).Return(temporal.NewNonRetryableApplicationError("no valid output after 3 tries", contract.ErrModel, nil)).Once()
	m.On("GetWorkflow", mock.Anything, "t1", "").Return(wr)

	var res contract.Result
	runCLI(t, m, nil, "", "result", "t1").wantOK(t, &res)
	if res.State != contract.StateCompleted || res.EndedBy != contract.EndedByClose {
		t.Errorf("result %+v", res)
	}
	runCLI(t, m, nil, "", "result", "t1").wantError(t, 1, contract.ErrModel, "no valid output")
}

func TestUnknownTask(t *testing.T) {
	m := mocks.NewClient(t)
	m.On("QueryWorkflow", mock.Anything, "nope", "", contract.QueryStatus).Return(nil, serviceerror.NewNotFound("workflow not found for ID: nope"))
	runCLI(t, m, nil, "", "--namespace=prod", "status", "nope").wantError(t, 1, starter.ErrTaskNotFound, `no task with ID "nope"`)
}

func TestSendCommandInputID(t *testing.T) {
	m := mocks.NewClient(t)
	var updates []client.UpdateWorkflowOptions
	h := mocks.NewWorkflowUpdateHandle(t)
	h.On("Get", mock.Anything, mock.Anything).Return(func(_ context.Context, ptr any) error {
		*ptr.(*contract.SendResult) = contract.SendResult{ReceivedAt: "2026-01-02T03:04:05.000000Z"}
		return nil
	})
	m.On("UpdateWorkflow", mock.Anything, mock.Anything).
		Run(func(a mock.Arguments) { updates = append(updates, a.Get(1).(client.UpdateWorkflowOptions)) }).
		Return(h, nil)
	var signaled []contract.TaskIO
	m.On("SignalWorkflow", mock.Anything, "t1", "", contract.SignalInput, mock.Anything).
		Run(func(a mock.Arguments) { signaled = append(signaled, a.Get(4).(contract.TaskIO)) }).
		Return(nil)

	var res contract.SendResult
	runCLI(t, m, nil, "", "send", "t1", "hello", "--input-id", "req-1").wantOK(t, &res)
	runCLI(t, m, nil, "", "send", "--input-id=req-2", "t1", "--json", `{"message": [{"mimeType": "text/plain", "text": "json"}], "input_id": "req-2"}`).wantOK(t, &res)
	runCLI(t, m, nil, "", "send", "t1", "no id").wantOK(t, &res)
	if res.ReceivedAt != "2026-01-02T03:04:05.000000Z" {
		t.Errorf("result %+v", res)
	}
	if len(updates) != 3 || updates[0].UpdateID != "req-1" || updates[1].UpdateID != "req-2" || updates[2].UpdateID != "" {
		t.Fatalf("updates %+v, want update IDs req-1, req-2 and none", updates)
	}
	if in := updates[0].Args[0].(contract.TaskIO); *in.Message[0].Text != "hello" || in.Values != nil {
		t.Errorf("sent %+v, want the text as is", in)
	}

	var out map[string]bool
	runCLI(t, m, nil, "", "send", "t1", "--signal", "hi", "--input-id", "req-3").wantOK(t, &out)
	runCLI(t, m, nil, "", "send", "t1", "--signal", "hi").wantOK(t, &out)
	if !out["signaled"] || len(signaled) != 2 {
		t.Fatalf("printed %v, signaled %+v", out, signaled)
	}
	if string(signaled[0].Values[contract.KeyInputID]) != `"req-3"` || *signaled[0].Message[0].Text != "hi" {
		t.Errorf("signaled %+v, want input_id \"req-3\"", signaled[0])
	}
	if _, ok := signaled[1].Values[contract.KeyInputID]; ok {
		t.Errorf("signaled %+v without --input-id, want no input_id", signaled[1])
	}
}

func TestSendCommandRefusesBadInputIDWithoutDialing(t *testing.T) {
	long := strings.Repeat("k", contract.MaxInputIDBytes+1)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"send", "t1", "hello", "--input-id", long}, "129 bytes is more than the 128 allowed"},
		{[]string{"send", "t1", "hello", "--signal", "--input-id", long}, "129 bytes is more than the 128 allowed"},
		{[]string{"send", "t1", "hello", "--input-id", ""}, "must not be empty"},
		{[]string{"send", "t1", "hello", "--input-id", "req-\xff"}, "not valid UTF-8"},
		{[]string{"send", "t1", "--json", `{"message": [], "input_id": "a"}`, "--input-id", "b"}, "give the ID one way only"},
		{[]string{"send", "t1", "--signal", "--json", `{"message": [], "input_id": "a"}`, "--input-id", "b"}, "give the ID one way only"},
	}
	for _, tc := range cases {
		r := runCLI(t, nil, nil, "", tc.args...)
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r.wantError(t, 1, contract.ErrInvalidInput, tc.want)
		})
	}
}

func TestUsageNamesTheInputID(t *testing.T) {
	for _, s := range []string{"--input-id ID", fmt.Sprintf("at most %d bytes", contract.MaxInputIDBytes), `"input_id"`} {
		if !strings.Contains(Usage, s) {
			t.Errorf("Usage does not mention %q", s)
		}
	}
}

func TestApprovalCommands(t *testing.T) {
	m := mocks.NewClient(t)
	m.On("QueryWorkflow", mock.Anything, "t1", "", contract.QueryApprovals).
		Return(jsonValue(t, []contract.Approval{pending()}), nil).Once()
	var sent []client.UpdateWorkflowOptions
	m.On("UpdateWorkflow", mock.Anything, mock.Anything).
		Run(func(a mock.Arguments) { sent = append(sent, a.Get(1).(client.UpdateWorkflowOptions)) }).
		Return(decideHandle(t, decided(false, "too much", "ops"), nil), nil)

	var list []map[string]any
	r := runCLI(t, m, nil, "", "approvals", "t1")
	r.wantOK(t, &list)
	if len(list) != 1 || list[0]["id"] != "t3.c1" || list[0]["capability"] != "refund" || list[0]["decision"] != nil ||
		!strings.Contains(r.stdout, `"decision": null`) || !strings.Contains(r.stdout, `"amount": 120`) {
		t.Errorf("approvals printed %s", r.stdout)
	}

	var a contract.Approval
	runCLI(t, m, nil, "", "deny", "t1", "t3.c1", "--reason", "too much", "--by=ops").wantOK(t, &a)
	if a.ID != "t3.c1" || a.Decision == nil || a.Decision.Approve || a.Decision.Reason != "too much" {
		t.Errorf("deny printed %+v", a)
	}
	runCLI(t, m, nil, "", "approve", "--by", "ops", "t1", "t3.c1").wantOK(t, &a)
	if len(sent) != 2 {
		t.Fatalf("%d updates, want 2", len(sent))
	}
	for i, want := range []contract.DecideArgs{{ID: "t3.c1", Reason: "too much", By: "ops"}, {ID: "t3.c1", By: "ops"}} {
		d := sent[i].Args[0].(contract.DecideArgs)
		if sent[i].WorkflowID != "t1" || sent[i].UpdateName != contract.UpdateDecide || d.ID != want.ID ||
			d.Approve == nil || *d.Approve != (i == 1) || d.Reason != want.Reason || d.By != want.By {
			t.Errorf("update %d: %+v, argument %+v", i, sent[i], d)
		}
		if sent[i].UpdateID != starter.DecideUpdateID(d) {
			t.Errorf("update %d: ID %q", i, sent[i].UpdateID)
		}
	}
}

func TestDecideCommandRefused(t *testing.T) {
	m := mocks.NewClient(t)
	m.On("UpdateWorkflow", mock.Anything, mock.Anything).
		Return(decideHandle(t, contract.Approval{}, temporal.NewApplicationError("APPROVAL_NOT_FOUND: task t1 has no approval t9.c1", "Error")), nil)
	e := runCLI(t, m, nil, "", "approve", "t1", "t9.c1").wantError(t, 1, starter.ErrApprovalNotFound, "no approval t9.c1")
	if e.Message != "task t1 has no approval t9.c1" {
		t.Errorf("message %q", e.Message)
	}
}

func TestDecideCommandUsage(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"approvals"}, "TASK_ID is missing"},
		{[]string{"approvals", "t1", "t3.c1"}, "unexpected arguments"},
		{[]string{"approve"}, "approve: TASK_ID is missing"},
		{[]string{"approve", "t1"}, "approve: APPROVAL_ID is missing"},
		{[]string{"deny", "t1", "t3.c1", "too", "much"}, "quote a --reason"},
		{[]string{"deny", "t1", "t3.c1", "--reason"}, "needs a value"},
		{[]string{"approve", "t1", "t3.c1", "--approve"}, "unknown flag --approve"},
	}
	for _, tc := range cases {
		r := runCLI(t, nil, nil, "", tc.args...)
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r.wantError(t, 2, ErrUsage, tc.want)
		})
	}
	// A bad approval ID is refused before dialing.
	runCLI(t, nil, nil, "", "deny", "t1", "", "--reason", "no").wantError(t, 1, contract.ErrInvalidInput, "approval ID")
	for _, s := range []string{"approvals TASK_ID", "approve TASK_ID APPROVAL_ID [--reason TEXT] [--by NAME]", "deny TASK_ID APPROVAL_ID", "APPROVAL_DECIDED"} {
		if !strings.Contains(Usage, s) {
			t.Errorf("Usage does not mention %q", s)
		}
	}
}
