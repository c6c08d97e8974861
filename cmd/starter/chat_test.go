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
