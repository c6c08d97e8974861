package mcp

import (
	"reflect"
	"strings"
	"testing"
)

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestServersFromEnvParsesPairsAndHeaders(t *testing.T) {
	servers, err := ServersFromEnv(envOf(map[string]string{
		EnvServers:                     " everything=http://127.0.0.1:3001/mcp,\n search-api=https://mcp.example.com/mcp  other=http://h/x",
		"AGENT_MCP_EVERYTHING_TOKEN":   "s3cret",
		"AGENT_MCP_SEARCH_API_HEADERS": `{"X-Api-Key": "k1", "x-team": "red"}`,
	}))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := servers.Names(), []string{"everything", "other", "search-api"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Names() = %q, want %q", got, want)
	}
	ev := servers["everything"]
	if ev.URL != "http://127.0.0.1:3001/mcp" || ev.Header.Get("Authorization") != "Bearer s3cret" {
		t.Fatalf("everything = %+v", ev)
	}
	sa := servers["search-api"]
	if sa.Header.Get("X-Api-Key") != "k1" || sa.Header.Get("X-Team") != "red" || sa.Header.Get("Authorization") != "" {
		t.Fatalf("search-api headers = %v", sa.Header)
	}
	if len(servers["other"].Header) != 0 {
		t.Fatalf("other has headers %v", servers["other"].Header)
	}
}

func TestServersFromEnvEmptyIsNone(t *testing.T) {
	servers, err := ServersFromEnv(envOf(nil))
	if err != nil || len(servers) != 0 {
		t.Fatalf("got %v, %v; want no servers, no error", servers, err)
	}
}

func TestServersFromEnvErrorsAreCorrective(t *testing.T) {
	for _, c := range []struct {
		name string
		env  map[string]string
		want []string // substrings of the error
	}{
		{"no equals", map[string]string{EnvServers: "http://h/mcp"}, []string{EnvServers, "name=URL", "such as"}},
		{"bad name", map[string]string{EnvServers: "ev.ery=http://h/mcp"}, []string{`"ev.ery"`, "letters, digits"}},
		{"not http", map[string]string{EnvServers: "ev=ftp://h/mcp"}, []string{`"ev"`, "http://", "e.g."}},
		{"no host", map[string]string{EnvServers: "ev=http:///mcp"}, []string{"Streamable HTTP"}},
		{"credentials in URL", map[string]string{EnvServers: "ev=http://u:p@h/mcp"}, []string{"AGENT_MCP_EV_TOKEN"}},
		{"twice", map[string]string{EnvServers: "ev=http://h/a,ev=http://h/b"}, []string{"listed twice"}},
		{"prefix clash", map[string]string{EnvServers: "a-b=http://h/a,a_b=http://h/b"}, []string{"AGENT_MCP_A_B_HEADERS", "rename"}},
		{"headers not JSON", map[string]string{EnvServers: "ev=http://h/a", "AGENT_MCP_EV_HEADERS": "X-Key: 1"}, []string{"AGENT_MCP_EV_HEADERS", "JSON object", "e.g."}},
		{"header value not string", map[string]string{EnvServers: "ev=http://h/a", "AGENT_MCP_EV_HEADERS": `{"X-Key": 1}`}, []string{"AGENT_MCP_EV_HEADERS"}},
		{"bad header name", map[string]string{EnvServers: "ev=http://h/a", "AGENT_MCP_EV_HEADERS": `{"X Key": "1"}`}, []string{`"X Key"`, "header name"}},
		{"header line break", map[string]string{EnvServers: "ev=http://h/a", "AGENT_MCP_EV_HEADERS": `{"X-Key": "1\r\nEvil: 2"}`}, []string{"line break"}},
		{"token and authorization", map[string]string{EnvServers: "ev=http://h/a", "AGENT_MCP_EV_TOKEN": "t", "AGENT_MCP_EV_HEADERS": `{"authorization": "Basic x"}`}, []string{"keep one"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ServersFromEnv(envOf(c.env))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestEnvPrefix(t *testing.T) {
	if got := EnvPrefix("search-api"); got != "AGENT_MCP_SEARCH_API_" {
		t.Fatalf("EnvPrefix = %q", got)
	}
}

func TestCutUTF8KeepsCharactersWhole(t *testing.T) {
	s := strings.Repeat("a", 1023) + "é" // é is 2 bytes, straddling byte 1024
	got := cutUTF8(s, MaxDescriptionBytes)
	if len(got) != 1023 || got != strings.Repeat("a", 1023) {
		t.Fatalf("cut to %d bytes: %q...", len(got), got[len(got)-3:])
	}
	if cutUTF8("short", 10) != "short" {
		t.Fatal("a short string was changed")
	}
}
