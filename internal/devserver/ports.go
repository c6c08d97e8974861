package devserver

import (
	"fmt"
	"net"
	"strconv"
)

// freePort asks the kernel for an unused port on ip. The port is then put in
// TIME_WAIT by closing an accepted connection from the server side, so Linux
// does not hand the same number to the next bind(":0") while we are still
// about to use it (an explicit bind still succeeds thanks to SO_REUSEADDR).
func freePort(ip string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, fmt.Errorf("pick free port: %w", err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port

	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		return 0, fmt.Errorf("pick free port: %w", err)
	}
	defer c.Close()
	s, err := l.Accept()
	if err != nil {
		return 0, fmt.Errorf("pick free port: %w", err)
	}
	s.Close()
	return port, nil
}

// portOrFree returns port when it can be bound, a free port when port is 0.
func portOrFree(ip string, port int) (int, error) {
	if port == 0 {
		return freePort(ip)
	}
	l, err := net.Listen("tcp", hostPort(ip, port))
	if err != nil {
		return 0, fmt.Errorf("port %d is not free (another dev server running?): %w", port, err)
	}
	l.Close()
	return port, nil
}

func hostPort(ip string, port int) string {
	return net.JoinHostPort(ip, strconv.Itoa(port))
}
