// Package mcp reaches the Model Context Protocol servers a worker's operator
// configures: it lists their tools and calls them over Streamable HTTP with
// the official Go SDK, in plain values a workflow can record.
package mcp

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"

	"github.com/agenttask/agenttask/internal/envheader"
)

// EnvServers lists the servers a worker reaches: "name=URL,name=URL" (commas
// or whitespace between pairs), each URL a Streamable HTTP endpoint; or a
// JSON object of names to {"url": ...} or {"command", "args", "env"} (a
// server the worker runs over stdio, servers_stdio.go).
const EnvServers = "AGENT_MCP_SERVERS"

// Server is one operator-configured MCP server. Header holds what the worker's
// environment gives it: AGENT_MCP_<NAME>_HEADERS (a JSON object of header
// names to values) and AGENT_MCP_<NAME>_TOKEN (sent as "Authorization: Bearer ...");
// <NAME> is the server name upper-cased with '-' as '_'.
type Server struct {
	Name   string
	URL    string
	Header http.Header
	// Command, when set, is a server the worker runs and speaks to over
	// stdio (URL empty): the program (found on the worker's PATH), its
	// arguments, and the whole of its environment (nothing of the
	// worker's is passed on).
	Command string
	Args    []string
	Env     map[string]string
}

// Stdio reports whether the worker runs the server over stdio.
func (s Server) Stdio() bool { return s.Command != "" }

// Servers by name.
type Servers map[string]Server

// Names lists the servers' names, sorted.
func (s Servers) Names() []string {
	names := make([]string, 0, len(s))
	for name := range s {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// serverNameRE is the rule contract applies to a capability's "server", so
// every name a task can give is one a worker can list.
var serverNameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// EnvPrefix returns the prefix of a server's own variables:
// "AGENT_MCP_<NAME>_", <NAME> upper-cased with '-' as '_'.
func EnvPrefix(server string) string {
	return "AGENT_MCP_" + strings.ToUpper(strings.ReplaceAll(server, "-", "_")) + "_"
}

// ServersFromEnv parses AGENT_MCP_SERVERS and each server's header variables;
// errors are corrective (which variable, what is wrong, an example). No
// servers listed is no servers, not an error.
func ServersFromEnv(getenv func(string) string) (Servers, error) {
	servers := Servers{}
	names := envheader.NewNames(EnvServers, "server")
	listed, err := listedServers(getenv(EnvServers))
	if err != nil {
		return nil, err
	}
	for _, srv := range listed {
		prefix := EnvPrefix(srv.Name)
		if err := names.Add(srv.Name, prefix); err != nil {
			return nil, err
		}
		if srv.Stdio() {
			if getenv(prefix+"TOKEN") != "" || getenv(prefix+"HEADERS") != "" {
				return nil, fmt.Errorf("%s: server %q runs over stdio, which sends no HTTP headers; give it its credentials in its \"env\" instead of %sTOKEN or %sHEADERS", EnvServers, srv.Name, prefix, prefix)
			}
		} else if srv.Header, err = envheader.FromEnv(prefix, getenv); err != nil {
			return nil, err
		}
		servers[srv.Name] = srv
	}
	return servers, nil
}

// listedServers reads AGENT_MCP_SERVERS in either form, in a stable order.
func listedServers(v string) ([]Server, error) {
	if strings.HasPrefix(strings.TrimSpace(v), "{") {
		return parseServersJSON(v)
	}
	var out []Server
	for _, pair := range envheader.Pairs(v) {
		srv, err := parseServerPair(pair)
		if err != nil {
			return nil, err
		}
		out = append(out, srv)
	}
	return out, nil
}

// parseServerPair reads one "name=URL" of AGENT_MCP_SERVERS.
func parseServerPair(pair string) (Server, error) {
	name, raw, ok := strings.Cut(pair, "=")
	if !ok {
		return Server{}, fmt.Errorf("%s: %q is not name=URL; write pairs such as %s=everything=http://localhost:3001/mcp,search=https://mcp.example.com/mcp", EnvServers, pair, EnvServers)
	}
	if !serverNameRE.MatchString(name) {
		return Server{}, fmt.Errorf("%s: server name %q must be 1 to 64 letters, digits, '_' or '-', e.g. everything=http://localhost:3001/mcp", EnvServers, name)
	}
	if err := checkURL(name, raw); err != nil {
		return Server{}, err
	}
	return Server{Name: name, URL: raw}, nil
}

// checkURL checks a server's Streamable HTTP endpoint.
func checkURL(name, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s: server %q: %q is not an http:// or https:// URL of a Streamable HTTP endpoint, e.g. %s=http://localhost:3001/mcp", EnvServers, name, raw, name)
	}
	if u.User != nil {
		return fmt.Errorf("%s: server %q: the URL carries credentials; put them in %sTOKEN or %sHEADERS instead, where they stay out of logs", EnvServers, name, EnvPrefix(name), EnvPrefix(name))
	}
	return nil
}
