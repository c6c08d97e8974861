package mcp

import (
	"reflect"
	"strings"
	"testing"
)

func TestServersFromEnvReadsTheJSONForm(t *testing.T) {
	servers, err := ServersFromEnv(envOf(map[string]string{
		EnvServers: `{"everything": {"command": "node", "args": ["server.js", "stdio"], "env": {"GREETING": "hi"}},
		              "web": {"url": "https://mcp.example.com/mcp"}}`,
		"AGENT_MCP_WEB_TOKEN": "tok",
	}))
	if err != nil {
		t.Fatal(err)
	}
	ev := servers["everything"]
	if !ev.Stdio() || ev.Command != "node" || !reflect.DeepEqual(ev.Args, []string{"server.js", "stdio"}) || ev.Env["GREETING"] != "hi" || ev.URL != "" {
		t.Fatalf("everything = %+v", ev)
	}
	web := servers["web"]
	if web.Stdio() || web.URL != "https://mcp.example.com/mcp" || web.Header.Get("Authorization") != "Bearer tok" {
		t.Fatalf("web = %+v", web)
	}
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{EnvServers: `{"x": {}}`}, `needs either "url" (Streamable HTTP) or "command" (stdio)`},
		{map[string]string{EnvServers: `{"x": {"url": "http://h/mcp", "command": "node"}}`}, `not both or neither`},
		{map[string]string{EnvServers: `{"x": {"url": "http://h/mcp", "env": {"A": "1"}}}`}, `"args" and "env" belong to a "command"`},
		{map[string]string{EnvServers: `{"x": {"command": " node"}}`}, `without surrounding spaces`},
		{map[string]string{EnvServers: `{"x": {"command": "node", "env": {"A=B": "1"}}}`}, `may not be empty or hold '='`},
		{map[string]string{EnvServers: `{"x": {"command": "node", "cwd": "/"}}`}, `unknown field "cwd"`},
		{map[string]string{EnvServers: `{"x y": {"command": "node"}}`}, `must be 1 to 64 letters`},
		{map[string]string{EnvServers: `{"x": {"command": "node"}}`, "AGENT_MCP_X_TOKEN": "t"}, `runs over stdio, which sends no HTTP headers`},
	} {
		_, err := ServersFromEnv(envOf(c.env))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want %q", c.env, err, c.want)
		}
	}
}

func TestStdioStderrIsLoggedByLine(t *testing.T) {
	var got []string
	w := &lineWriter{server: "s", log: func(server, line string) { got = append(got, server+": "+line) }}
	_, _ = w.Write([]byte("one\r\ntw"))
	_, _ = w.Write([]byte("o\n"))
	_, _ = w.Write([]byte(strings.Repeat("x", maxStderrLine+10)))
	want := []string{"s: one", "s: two", "s: " + strings.Repeat("x", maxStderrLine)}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q", got)
	}
	if len(w.buf) != 10 {
		t.Fatalf("kept %d bytes, want the 10 after the cut", len(w.buf))
	}
}

func TestCommandTransportPassesOnlyTheEntrysEnvironment(t *testing.T) {
	ct := commandTransport(Server{Name: "s", Command: "env", Env: map[string]string{"B": "2", "A": "1"}}, stderrToWorker)
	if !reflect.DeepEqual(ct.Command.Env, []string{"A=1", "B=2"}) {
		t.Fatalf("env = %q", ct.Command.Env)
	}
	empty := commandTransport(Server{Name: "s", Command: "env"}, stderrToWorker)
	if empty.Command.Env == nil || len(empty.Command.Env) != 0 {
		t.Fatalf("no env must be an empty, non-nil list (nil passes the worker's on): %#v", empty.Command.Env)
	}
}
