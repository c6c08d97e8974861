// Package embedded runs a NATS server with JetStream inside the process,
// so the dev stack needs no broker of its own. Only the dev binary and the
// broker's tests link it: nats-server is a large dependency.
package embedded

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// readyTimeout bounds Start's wait for the server to take connections.
const readyTimeout = 10 * time.Second

// Options configure Start.
type Options struct {
	// Dir is the JetStream store directory; "" means a temporary one,
	// removed on Shutdown.
	Dir string
	// Host defaults to 127.0.0.1: the dev broker is not for other hosts.
	Host string
	// Port 0 takes a free port; the dev stack passes NATS's usual 4222.
	Port int
}

// Server is a running embedded NATS server.
type Server struct {
	ns      *server.Server
	url     string
	tempDir string
}

// Start starts the server and waits until it takes connections. It logs
// nothing: the dev binary's stdout carries its READY line.
func Start(opts Options) (*Server, error) {
	host := opts.Host
	if host == "" {
		host = "127.0.0.1"
	}
	port := opts.Port
	if port == 0 {
		port = server.RANDOM_PORT // nats-server reads 0 as its default, 4222
	} else if err := portFree(host, port); err != nil {
		return nil, err
	}
	s := &Server{}
	dir := opts.Dir
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "agenttask-nats-"); err != nil {
			return nil, fmt.Errorf("embedded nats: %w", err)
		}
		s.tempDir = dir
	}
	ns, err := server.NewServer(&server.Options{
		ServerName: "agenttask-dev",
		Host:       host,
		Port:       port,
		JetStream:  true,
		StoreDir:   dir,
		NoLog:      true,
		NoSigs:     true, // the dev binary handles its own signals
	})
	if err != nil {
		s.removeTemp()
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	log := &fatalLog{}
	ns.SetLogger(log, false, false)
	ns.Start()
	if err := waitReady(ns, log); err != nil {
		ns.Shutdown()
		ns.WaitForShutdown()
		s.removeTemp()
		return nil, err
	}
	s.ns = ns
	addr := ns.Addr().(*net.TCPAddr)
	urlHost := host
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		urlHost = "127.0.0.1" // listening everywhere: this host reaches it on loopback
	}
	s.url = "nats://" + net.JoinHostPort(urlHost, strconv.Itoa(addr.Port))
	return s, nil
}

// portFree fails clearly when the port is taken: the server itself would
// only log it and never become ready.
func portFree(host string, port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("embedded nats: port %d on %s is not free (another NATS server?): %w", port, host, err)
	}
	return l.Close()
}

// waitReady waits for the server, but returns at once on a fatal error
// (e.g. a JetStream store it cannot open), which the server only logs.
func waitReady(ns *server.Server, log *fatalLog) error {
	deadline := time.Now().Add(readyTimeout)
	for time.Now().Before(deadline) {
		if err := log.fatal(); err != nil {
			return err
		}
		if ns.ReadyForConnections(100 * time.Millisecond) {
			return nil
		}
	}
	if err := log.fatal(); err != nil {
		return err
	}
	return fmt.Errorf("embedded nats: not ready after %s", readyTimeout)
}

// URL is the client URL, nats://host:port.
func (s *Server) URL() string { return s.url }

// Shutdown stops the server and waits until it has.
func (s *Server) Shutdown() {
	s.ns.Shutdown()
	s.ns.WaitForShutdown()
	s.removeTemp()
}

func (s *Server) removeTemp() {
	if s.tempDir != "" {
		_ = os.RemoveAll(s.tempDir)
	}
}

// fatalLog keeps the server's first fatal error and drops everything else.
type fatalLog struct {
	mu  sync.Mutex
	err error
}

func (l *fatalLog) fatal() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

func (l *fatalLog) Fatalf(format string, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		l.err = errors.New("embedded nats: " + fmt.Sprintf(format, v...))
	}
}

func (*fatalLog) Noticef(string, ...any) {}
func (*fatalLog) Warnf(string, ...any)   {}
func (*fatalLog) Errorf(string, ...any)  {}
func (*fatalLog) Debugf(string, ...any)  {}
func (*fatalLog) Tracef(string, ...any)  {}
