package mcp

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// StderrLog receives each line a stdio server writes to its stderr, with
// the server's name (servers_stdio.go).
type StderrLog func(server, line string)

// stderrToWorker is the default StderrLog: the worker's stderr, each line
// under the server's name.
func stderrToWorker(server, line string) {
	fmt.Fprintf(os.Stderr, "mcp server %s: %s\n", server, line)
}

// maxStderrLine bounds one logged line; a server that writes without line
// breaks is cut, not buffered without end.
const maxStderrLine = 4 << 10

// stdioTerminate is how long a server gets to exit once its stdin closes
// (the worker stops, or its session broke) before SIGTERM.
const stdioTerminate = 2 * time.Second

// commandTransport starts srv's command with exactly its entry's
// environment: the program is found on the worker's PATH, but nothing of
// the worker's environment reaches it.
func commandTransport(srv Server, log StderrLog) *sdk.CommandTransport {
	cmd := exec.Command(srv.Command, srv.Args...)
	cmd.Env = []string{} // not nil: nil would pass the worker's environment on
	keys := make([]string, 0, len(srv.Env))
	for k := range srv.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		cmd.Env = append(cmd.Env, k+"="+srv.Env[k])
	}
	cmd.Stderr = &lineWriter{server: srv.Name, log: log}
	// A child of the server that outlives it (npx's node) could hold the
	// stderr pipe open: Wait gives up on it after this long.
	cmd.WaitDelay = 5 * time.Second
	return &sdk.CommandTransport{Command: cmd, TerminateDuration: stdioTerminate}
}

// lineWriter hands whole lines to log.
type lineWriter struct {
	server string
	log    StderrLog
	mu     sync.Mutex
	buf    []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 && len(w.buf) <= maxStderrLine {
			return len(p), nil
		}
		if i < 0 || i > maxStderrLine {
			i = maxStderrLine
		}
		w.log(w.server, string(bytes.TrimRight(w.buf[:i], "\r")))
		if i < len(w.buf) && w.buf[i] == '\n' {
			i++
		}
		w.buf = append(w.buf[:0], w.buf[i:]...)
	}
}
