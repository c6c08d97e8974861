package tasksapi

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A body not sent within the read timeout ends the request; a request
// whose body was read, or that has none, may answer (stream) for longer
// than the read timeout without its context being cut.
func TestTimeoutsLeaveStreamsAlone(t *testing.T) {
	const scale = 0.005 // ReadTimeout 300 ms
	d := time.Duration(float64(ReadTimeout) * scale)
	results := make(chan string, 4)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			results <- "body: " + err.Error()
			return
		}
		// stream for 3 deadlines, as an SSE answer would
		for i := 0; i < 6; i++ {
			select {
			case <-r.Context().Done():
				results <- fmt.Sprintf("cut after %d pieces", i)
				return
			case <-time.After(d / 2):
			}
			_, _ = fmt.Fprintf(w, "piece %d\n", i)
			http.NewResponseController(w).Flush()
		}
		results <- "streamed"
	})
	srv := httptest.NewUnstartedServer(nil)
	srv.Config = httpServer(h, scale)
	srv.Start()
	defer srv.Close()

	// a slow body: headers, then nothing
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nab")
	select {
	case got := <-results:
		if !strings.Contains(got, "timeout") {
			t.Fatalf("slow body: %s", got)
		}
	case <-time.After(10 * d):
		t.Fatal("a stalled body was waited for past its deadline")
	}

	for _, tc := range []struct{ method, body string }{{"POST", `{"stream":true}`}, {"GET", ""}} {
		req, _ := http.NewRequest(tc.method, srv.URL, strings.NewReader(tc.body))
		if tc.body == "" {
			req.Body = http.NoBody
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for sc := bufio.NewScanner(resp.Body); sc.Scan(); {
			n++
		}
		resp.Body.Close()
		if got := <-results; got != "streamed" || n != 6 {
			t.Fatalf("%s: %s, %d pieces", tc.method, got, n)
		}
	}
}

// A client that sends half its headers, or keeps a connection open with
// no request, is disconnected after HeaderTimeout or IdleTimeout.
func TestHeaderAndIdleTimeoutsCloseConnections(t *testing.T) {
	const scale = 0.02 // headers 200 ms, idle 2.4 s (read 1.2 s)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") }))
	srv.Config = httpServer(srv.Config.Handler, scale)
	srv.Start()
	defer srv.Close()
	closedWithin := func(conn net.Conn, limit time.Duration) time.Duration {
		t.Helper()
		start := time.Now()
		_ = conn.SetReadDeadline(start.Add(limit))
		_, err := io.ReadAll(conn)
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("the server kept the connection open for %s", limit)
		}
		return time.Since(start)
	}

	half, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer half.Close()
	fmt.Fprintf(half, "GET / HTTP/1.1\r\nHost: x\r\n") // never the blank line
	if took := closedWithin(half, 10*time.Duration(float64(HeaderTimeout)*scale)); took < time.Duration(float64(HeaderTimeout)*scale)/2 {
		t.Fatalf("closed after %s, before the header timeout", took)
	}

	idle, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	fmt.Fprintf(idle, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(idle)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	idleFor := time.Duration(float64(IdleTimeout) * scale)
	start := time.Now()
	_ = idle.SetReadDeadline(start.Add(4 * idleFor))
	if _, err := br.ReadByte(); err == nil {
		t.Fatal("the server wrote on an idle connection")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("an idle connection was kept past %s", 4*idleFor)
	}
	if took := time.Since(start); took < idleFor/2 {
		t.Fatalf("an idle connection was closed after %s, before the idle timeout %s", took, idleFor)
	}
}
