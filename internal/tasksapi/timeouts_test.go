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
	const d = 300 * time.Millisecond
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
	srv.Config = httpServer(h, d)
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
