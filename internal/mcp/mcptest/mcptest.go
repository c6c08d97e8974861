// Package mcptest serves an MCP server for tests, built with the official Go
// SDK and reached over real HTTP (Streamable HTTP). Its tools are modelled
// on the reference "everything" server: echo, get-sum, get-tiny-image,
// get-resource, fail and needs-approval.
package mcptest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Path is where the server answers MCP requests.
const Path = "/mcp"

// Server is a running test MCP server.
type Server struct {
	cfg  config
	http *httptest.Server
	down atomic.Bool

	mu      sync.Mutex
	mcp     http.Handler // replaced by Restart
	require map[string]string
	seen    http.Header // the last MCP request's headers
	calls   map[string]int
}

// Option configures a Server.
type Option func(*config)

type config struct {
	pageSize  int
	versions  []string
	extra     []extraTool
	jsonReply bool
}

type extraTool struct {
	tool    *sdk.Tool
	handler sdk.ToolHandler
}

// WithPageSize lists tools in pages of n, to exercise pagination.
func WithPageSize(n int) Option { return func(c *config) { c.pageSize = n } }

// WithProtocolVersions limits the protocol versions the server speaks, e.g.
// "2025-11-25" for a server that keeps sessions (Mcp-Session-Id).
func WithProtocolVersions(v ...string) Option {
	return func(c *config) { c.versions = append(c.versions, v...) }
}

// WithTool adds a tool besides the standard ones; its calls are counted.
func WithTool(t *sdk.Tool, h sdk.ToolHandler) Option {
	return func(c *config) { c.extra = append(c.extra, extraTool{t, h}) }
}

// WithJSONResponse answers calls with application/json instead of an SSE
// stream.
func WithJSONResponse() Option { return func(c *config) { c.jsonReply = true } }

// New starts a server that t closes when it ends.
func New(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s := Start(opts...)
	t.Cleanup(s.Close)
	return s
}

// Start starts a server; the caller closes it. Usable outside tests.
func Start(opts ...Option) *Server {
	s := &Server{require: map[string]string{}, calls: map[string]int{}}
	for _, o := range opts {
		o(&s.cfg)
	}
	s.mcp = s.newHandler()
	s.http = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	return s
}

// URL is the server's Streamable HTTP endpoint.
func (s *Server) URL() string { return s.http.URL + Path }

// Calls counts the calls that reached tool's handler.
func (s *Server) Calls(tool string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[tool]
}

// SetDown makes the server answer 503 to every request while down.
func (s *Server) SetDown(down bool) { s.down.Store(down) }

// RequireHeader makes the server answer 401 to requests without the header
// name set to value.
func (s *Server) RequireHeader(name, value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.require[http.CanonicalHeaderKey(name)] = value
}

// Header returns the header name of the last MCP request that reached the
// server.
func (s *Server) Header(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen.Get(name)
}

// Restart drops every session and connection, as a server process that
// restarts would; the URL stays the same. It returns after a pause, as a
// restart takes a while: clients notice their kept-alive connections
// closed before they send on them again.
func (s *Server) Restart() {
	h := s.newHandler()
	s.mu.Lock()
	s.mcp = h
	s.mu.Unlock()
	s.http.CloseClientConnections()
	time.Sleep(restartPause)
}

// restartPause is how long Restart takes.
const restartPause = 100 * time.Millisecond

// Close stops the server.
func (s *Server) Close() {
	s.http.CloseClientConnections()
	s.http.Close()
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if s.down.Load() {
		http.Error(w, "down for the test", http.StatusServiceUnavailable)
		return
	}
	if r.URL.Path != Path {
		http.NotFound(w, r)
		return
	}
	s.mu.Lock()
	s.seen = r.Header.Clone()
	h := s.mcp
	for name, want := range s.require {
		if r.Header.Get(name) != want {
			s.mu.Unlock()
			http.Error(w, "missing or wrong "+name, http.StatusUnauthorized)
			return
		}
	}
	s.mu.Unlock()
	h.ServeHTTP(w, r)
}

func (s *Server) count(tool string) {
	s.mu.Lock()
	s.calls[tool]++
	s.mu.Unlock()
}

// newHandler builds a fresh MCP server and its HTTP handler: a restart
// forgets every session.
func (s *Server) newHandler() http.Handler {
	srv := sdk.NewServer(&sdk.Implementation{Name: "mcptest-everything", Version: "1"}, &sdk.ServerOptions{
		PageSize:                  s.cfg.pageSize,
		SupportedProtocolVersions: s.cfg.versions,
	})
	s.addTools(srv)
	for _, x := range s.cfg.extra {
		h, name := x.handler, x.tool.Name
		srv.AddTool(x.tool, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			s.count(name)
			return h(ctx, req)
		})
	}
	return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{JSONResponse: s.cfg.jsonReply})
}
