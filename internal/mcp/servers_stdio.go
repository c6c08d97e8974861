package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode"
)

// A server the operator lists as a command runs under the worker: started
// on first use with exactly the environment its entry names (no variable of
// the worker's, so no credential of the worker's reaches it), started again
// when it dies (the next call connects afresh), stopped with the worker,
// its stderr written to the worker's log line by line under its name
// (pool_stdio.go). Written as JSON in AGENT_MCP_SERVERS:
//
//	{"everything": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"], "env": {"LOG": "1"}},
//	 "search": {"url": "https://mcp.example.com/mcp"}}

// serverEntry is one server of the JSON form.
type serverEntry struct {
	URL     string            `json:"url"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
}

const exampleJSON = `{"everything": {"command": "node", "args": ["server.js", "stdio"]}, "search": {"url": "https://mcp.example.com/mcp"}}`

// parseServersJSON reads the JSON form, servers by name.
func parseServersJSON(v string) ([]Server, error) {
	dec := json.NewDecoder(strings.NewReader(v))
	dec.DisallowUnknownFields()
	var entries map[string]serverEntry
	if err := dec.Decode(&entries); err != nil {
		return nil, fmt.Errorf("%s: not a JSON object of server names to {\"url\"} or {\"command\", \"args\", \"env\"} (%v); e.g. %s", EnvServers, err, exampleJSON)
	}
	names := make([]string, 0, len(entries))
	for name := range entries {
		names = append(names, name)
	}
	sort.Strings(names)
	out := make([]Server, 0, len(names))
	for _, name := range names {
		e := entries[name]
		if !serverNameRE.MatchString(name) {
			return nil, fmt.Errorf("%s: server name %q must be 1 to 64 letters, digits, '_' or '-'", EnvServers, name)
		}
		switch {
		case (e.URL == "") == (e.Command == ""):
			return nil, fmt.Errorf("%s: server %q needs either \"url\" (Streamable HTTP) or \"command\" (stdio), not both or neither; e.g. %s", EnvServers, name, exampleJSON)
		case e.URL != "":
			if len(e.Args) > 0 || len(e.Env) > 0 {
				return nil, fmt.Errorf("%s: server %q: \"args\" and \"env\" belong to a \"command\"; a \"url\" server takes its credentials from %sTOKEN or %sHEADERS", EnvServers, name, EnvPrefix(name), EnvPrefix(name))
			}
			if err := checkURL(name, e.URL); err != nil {
				return nil, err
			}
			out = append(out, Server{Name: name, URL: e.URL})
			continue
		}
		if err := checkCommand(name, e); err != nil {
			return nil, err
		}
		out = append(out, Server{Name: name, Command: e.Command, Args: e.Args, Env: e.Env})
	}
	return out, nil
}

// checkCommand refuses a command the worker could not run as written.
func checkCommand(name string, e serverEntry) error {
	bad := func(s string) bool { return strings.IndexFunc(s, unicode.IsControl) >= 0 || strings.ContainsRune(s, 0) }
	if strings.TrimSpace(e.Command) != e.Command || bad(e.Command) {
		return fmt.Errorf("%s: server %q: command %q must be a program's name or path, without surrounding spaces or control characters; arguments go in \"args\"", EnvServers, name, e.Command)
	}
	for i, a := range e.Args {
		if strings.ContainsRune(a, 0) {
			return fmt.Errorf("%s: server %q: args[%d] holds a NUL byte", EnvServers, name, i)
		}
	}
	for k, v := range e.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") || bytes.ContainsRune([]byte(v), 0) {
			return fmt.Errorf("%s: server %q: env %q: a variable's name may not be empty or hold '=' or NUL, nor its value NUL", EnvServers, name, k)
		}
	}
	return nil
}
