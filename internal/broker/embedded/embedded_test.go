package embedded

import (
	"net"
	"strings"
	"testing"
)

func TestStartRefusesATakenPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	s, err := Start(Options{Port: port})
	if err == nil {
		s.Shutdown()
		t.Fatal("Start succeeded on a taken port")
	}
	if !strings.Contains(err.Error(), "not free") {
		t.Errorf("error %v", err)
	}
}

func TestStartOnAFreePortAndShutdown(t *testing.T) {
	s, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.URL(), "nats://127.0.0.1:") || strings.HasSuffix(s.URL(), ":4222") {
		t.Errorf("URL %q", s.URL())
	}
	s.Shutdown()
}

func TestStartMakesItsDirAndListensEverywhere(t *testing.T) {
	s, err := Start(Options{Dir: t.TempDir() + "/a/nats", Host: "0.0.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	if !strings.HasPrefix(s.URL(), "nats://127.0.0.1:") {
		t.Errorf("URL %q", s.URL())
	}
}
