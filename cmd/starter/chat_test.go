package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/agenttask/agenttask/internal/broker"
)

// upload prints a plain final line on a stderr that is not a terminal.
func TestUploadPrintsAFinalLineOffATerminal(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "notes.txt")
	require.NoError(t, os.WriteFile(f, []byte("hello"), 0o644))
	var out, errb bytes.Buffer
	noDial := func(client.Options) (client.Client, error) { t.Fatal("upload dialed Temporal"); return nil, nil }
	code := mainWith(context.Background(), []string{"upload", "t-1", f, "--mount-url", "file://" + filepath.Join(dir, "store")},
		nil, &out, &errb, func(string) string { return "" }, noDial)
	require.Equal(t, 0, code, errb.String())
	require.Contains(t, out.String(), `"file": "task://notes.txt"`)
	require.Regexp(t, regexp.MustCompile(`^uploaded notes.txt: 5 bytes in \S+\n$`), errb.String())
}

// chat refuses a command line it cannot use, before dialing.
func TestChatRefusesBadArguments(t *testing.T) {
	for _, args := range [][]string{
		{"chat"},
		{"chat", "t-1", "--agent", `{"name":"a","model":"test/m"}`},
		{"chat", "t-1", "t-2"},
		{"chat", "t-1", "--input", "hi"},
	} {
		var out, errb bytes.Buffer
		noDial := func(client.Options) (client.Client, error) { t.Fatal("chat dialed Temporal"); return nil, nil }
		code := mainWith(context.Background(), args, nil, &out, &errb, func(string) string { return "" }, noDial)
		require.Equal(t, 2, code, "%q: %s", args, errb.String())
		require.Contains(t, errb.String(), `"USAGE"`, args)
	}
}

// chat prints what the task does as its events come: a tool call asked
// for (after the text it interrupts, on a line of its own), its result, a
// sub-task's start; a sub-task's text and a wrapped reply's text are not
// the answer, so they are not printed.
func TestChatPrintsToolCallsAsTheyHappen(t *testing.T) {
	var out bytes.Buffer
	s := &chatSession{out: &out}
	answer := 0
	for _, e := range []broker.Event{
		{Turn: 1, Answer: 1, Type: broker.TypeText, Text: "Let me look."},
		{Turn: 1, Answer: 1, Type: broker.TypeToolCallStarted, Tool: &broker.ToolCall{ID: "c1", Name: "crm__lookup", Arguments: []byte(`{"id":"o-1"}`)}},
		{Turn: 1, Path: "helper.t1.c1", Type: broker.TypeSubtaskStarted},
		{Turn: 1, Path: "helper.t1.c1", Type: broker.TypeText, Text: "not the answer"},
		{Turn: 1, Answer: 2, Type: broker.TypeToolCallFinished, Tool: &broker.ToolCall{ID: "c1", Name: "crm__lookup", Result: "shipped"}},
		{Turn: 1, Answer: 2, Type: broker.TypeToolCallFinished, Tool: &broker.ToolCall{ID: "c2", Name: "refund", Result: "error: refused", Error: true}},
		{Turn: 1, Answer: 2, Type: broker.TypeText, Text: "{\"reply\":", Wrapped: true},
	} {
		answer = s.streamEvent(e, answer)
	}
	got := out.String()
	require.Regexp(t, `Let me look\.\ntool   calling crm__lookup \{"id":"o-1"\}\n`, got)
	require.Contains(t, got, "tool   sub-task helper.t1.c1 started\n")
	require.Contains(t, got, "tool   crm__lookup → shipped\n")
	require.Contains(t, got, "tool   refund ✗ error: refused\n")
	require.NotContains(t, got, "not the answer")
	require.NotContains(t, got, "reply")
}
