package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// server is the embedded Temporal server (bin/agentdev server), run as a
// separate process on free ports with an in-memory database, the way the
// integration tests run it.
type server struct {
	addr string
	cmd  *exec.Cmd
	tmp  string // where agentdev was built when AGENTDEV_BIN is unset
	nats string // the broker agentdev embeds
}

// startServer runs AGENTDEV_BIN (built by make bench), or builds agentdev
// into a temporary folder when the variable is unset, and waits for its
// READY line.
func startServer() (*server, error) { return startServerOf(os.Getenv("AGENTDEV_BIN")) }

// startServerOf runs the agentdev binary bin ("": builds one, as above).
func startServerOf(bin string) (*server, error) {
	s := &server{}
	if bin == "" {
		tmp, err := os.MkdirTemp("", "agenttask-bench-bin-")
		if err != nil {
			return nil, err
		}
		s.tmp = tmp
		bin = filepath.Join(tmp, "agentdev")
		fmt.Fprintln(os.Stderr, "bench: AGENTDEV_BIN unset; building agentdev into", tmp)
		build := exec.Command("go", "build", "-o", bin, "./cmd/agentdev")
		build.Dir = moduleRoot()
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			s.cleanup()
			return nil, fmt.Errorf("building agentdev: %w", err)
		}
	}
	s.cmd = exec.Command(bin, "server", "--port", "0", "--ui-port", "-1", "--nats-port", "0", "--log-level", "error")
	s.cmd.Stderr = os.Stderr
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		s.cleanup()
		return nil, err
	}
	if err := s.cmd.Start(); err != nil {
		s.cleanup()
		return nil, fmt.Errorf("starting %s: %w", bin, err)
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
		s.addr, s.nats = f[1], f[3]
		return s, nil
	case <-time.After(2 * time.Minute):
		s.stop()
		return nil, fmt.Errorf("%s printed no READY line within 2 minutes", bin)
	}
}

// stop sends SIGTERM and waits (killing after 20 s).
func (s *server) stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = s.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = s.cmd.Process.Kill()
			<-done
		}
	}
	s.cleanup()
}

func (s *server) cleanup() {
	if s.tmp != "" {
		_ = os.RemoveAll(s.tmp)
	}
}

// moduleRoot is the folder holding go.mod (go run ./bench runs from there;
// `go env GOMOD` finds it from anywhere inside the module).
func moduleRoot() string {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if mod := strings.TrimSpace(string(out)); err == nil && mod != "" && mod != os.DevNull {
		return filepath.Dir(mod)
	}
	return "."
}
