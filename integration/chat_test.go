package integration

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/internal/broker"
	"github.com/agenttask/agenttask/internal/mount"
	"github.com/agenttask/agenttask/internal/testmodel"
)

// chatTerm is `starter chat` on a pseudo-terminal: what it printed so far,
// and a transcript kept as the test's artifact.
type chatTerm struct {
	t    *testing.T
	tty  *os.File
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
	mark int // where the next expect starts reading
}

func startChat(t *testing.T, h *harness, name string, args ...string) *chatTerm {
	t.Helper()
	cli(t, h, "help") // builds the binary once when AGENT_STARTER_BIN is not given
	cmd := exec.Command(starterBin, append([]string{"--address", temporalAddr, "--task-queue", h.queue, "chat"}, args...)...)
	cmd.Env = append(os.Environ(), mount.EnvMounts+"="+jsonOf(h.mounts), broker.EnvURL+"="+natsURL)
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 120})
	require.NoError(t, err)
	c := &chatTerm{t: t, tty: tty, cmd: cmd, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		buf := make([]byte, 4096)
		for {
			n, err := tty.Read(buf)
			c.mu.Lock()
			c.out.Write(buf[:n])
			c.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = tty.Close()
		<-c.done
		c.save(name)
	})
	return c
}

// save writes the transcript under the test's temp dir and, when
// AGENT_SCREENSHOTS names a folder, there too.
func (c *chatTerm) save(name string) {
	text := strings.ReplaceAll(c.text(), "\r\n", "\n")
	dirs := []string{c.t.TempDir()}
	if d := os.Getenv("AGENT_SCREENSHOTS"); d != "" {
		dirs = append(dirs, d)
	}
	for _, d := range dirs {
		p := filepath.Join(d, name+".txt")
		if err := os.WriteFile(p, []byte(text), 0o644); err == nil {
			c.t.Logf("transcript: %s", p)
		}
	}
}

func (c *chatTerm) text() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.String()
}

// expect waits for s after what the last expect matched.
func (c *chatTerm) expect(s string) {
	c.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		all := c.text()
		if i := strings.Index(all[c.mark:], s); i >= 0 {
			c.mark += i + len(s)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.t.Fatalf("the chat never showed %q; it showed:\n%s", s, c.text())
}

func (c *chatTerm) typeLine(s string) {
	c.t.Helper()
	_, err := c.tty.Write([]byte(s + "\r"))
	require.NoError(c.t, err)
}

// A streamed conversation: the answer arrives in pieces before it ends, a
// message typed mid-turn shows queued then committed, Ctrl-C cancels the
// running turn, Ctrl-D leaves with the task still running.
func TestChatStreamsQueuesAndCancels(t *testing.T) {
	require.NotEmpty(t, natsURL, "streaming needs the broker")
	h := newHarness(t)
	h.startWorker()
	gate := make(chan struct{})
	var calls int
	var mu sync.Mutex
	h.model.SetHandler(func(call testmodel.Call) testmodel.Reply {
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		switch n {
		case 1: // paced: the second half waits for the test
			return testmodel.Reply{Chunks: []string{"Hello ", "from ", "the ", "stream."}, BeforeChunk: func(i int) {
				if i == 2 {
					select {
					case <-gate:
					case <-time.After(60 * time.Second):
					}
				}
			}}
		case 2:
			return testmodel.Reply{Text: "second answer: " + call.Messages[len(call.Messages)-1].Content}
		default: // held until canceled
			return testmodel.Reply{Chunks: []string{"never ", "finished"}, BeforeChunk: func(i int) {
				if i == 1 {
					time.Sleep(60 * time.Second)
				}
			}}
		}
	})
	c := startChat(t, h, "starter-chat", "--agent", jsonOf(agent("a")), "--input", "hi", "--task-id", "chat-stream")
	c.expect("started task chat-stream")
	c.expect("streamed")
	c.expect("Hello from ")
	require.NotContains(t, c.text(), "stream.", "the first pieces show before the answer ends")

	c.typeLine("are you there?")
	c.expect("queued: a turn is running")
	m := regexp.MustCompile(`\(received (\S+), queued: a turn is running\)`).FindStringSubmatch(c.text())
	require.NotNil(t, m)
	from := c.mark
	close(gate)
	c.expect("stream.")
	c.expect("second answer: are you there?") // streamed too
	c.mark = from
	c.expect("(received " + m[1] + ", committed ") // the queued input's read receipt
	c.mark = from
	c.expect("answer committed")
	c.expect("answer committed")

	c.typeLine("a long one")
	c.expect("never ")
	_, err := c.tty.Write([]byte{3}) // Ctrl-C
	require.NoError(t, err)
	c.expect("canceling the running turn")
	c.expect("turn 3 canceled")
	eventually(t, 30*time.Second, "the third turn canceled", func() bool {
		st := status(t, "chat-stream")
		return st.LastTurn != nil && st.LastTurn.Turn == 3 && st.LastTurn.Canceled
	})
	time.Sleep(2100 * time.Millisecond) // the next Ctrl-C is a new one
	_, err = c.tty.Write([]byte{4})     // Ctrl-D
	require.NoError(t, err)
	c.expect("left the chat; task chat-stream goes on")
	<-c.done
	require.Equal(t, "waiting", string(status(t, "chat-stream").State), "leaving does not close the task")
}

// A task whose agent asks for approval: the chat asks in place and y approves.
func TestChatApprovesInPlace(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	queue := startRefundsWorker(t)
	h.model.SetHandler(refundModel)
	c := startChat(t, h, "starter-chat-approval", "--agent", jsonOf(refundAgent(queue, map[string]any{"approval": "always"})), "--task-id", "chat-approval")
	c.expect("not streamed: answers print whole")
	c.typeLine("refund o-1 25")
	c.expect("(received ")
	c.expect("wants to call refund")
	c.expect("approve? [y/N/reason]")
	c.typeLine("y")
	c.expect("approved t1.c1")
	c.expect("agent ")
	c.expect("done: ")
	c.typeLine("/quit")
	c.expect("left the chat")
}
