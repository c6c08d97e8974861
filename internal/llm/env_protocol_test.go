package llm

import (
	"strings"
	"testing"
)

func TestProviderProtocolsFromEnv(t *testing.T) {
	o, err := RouterOptionsFromEnv(envOf(map[string]string{
		"ANTHROPIC_API_KEY":     "sk-ant",
		"GEMINI_API_KEY":        "g-key",
		"GEMINI_BASE_URL":       "http://localhost:9000",
		"AGENT_MODEL_PROVIDERS": `{"claude-proxy":{"baseURL":"https://proxy.example","apiKeyEnv":"P_KEY","protocol":"anthropic"},"gw":{"baseURL":"https://gw.example/v1","protocol":"OpenAI"},"vertexish":{"baseURL":"https://g.example","protocol":"google"}}`,
		"P_KEY":                 "pk",
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Endpoint{
		"anthropic":    {BaseURL: DefaultAnthropicBaseURL, APIKey: "sk-ant", Protocol: ProtocolAnthropic},
		"google":       {BaseURL: "http://localhost:9000", APIKey: "g-key", Protocol: ProtocolGoogle},
		"claude-proxy": {BaseURL: "https://proxy.example", APIKey: "pk", Protocol: ProtocolAnthropic},
		"gw":           {BaseURL: "https://gw.example/v1"}, // openai is the default, kept as ""
		"vertexish":    {BaseURL: "https://g.example", Protocol: ProtocolGoogle},
	}
	if len(o.Endpoints) != len(want) {
		t.Fatalf("endpoints = %+v, want %+v", o.Endpoints, want)
	}
	for name, ep := range want {
		if o.Endpoints[name] != ep {
			t.Errorf("%s = %+v, want %+v", name, o.Endpoints[name], ep)
		}
	}
	if o.EnableDemo {
		t.Error("the demo model must be off beside real endpoints")
	}
	if got := o.DefaultMaxTokens("anthropic/claude-sonnet-4-5"); got != 64000 {
		t.Errorf("default max_tokens of anthropic/claude-sonnet-4-5 = %d, want the catalogue's 64000", got)
	}
	if got := o.DefaultMaxTokens("claude-proxy/unknown"); got != 0 {
		t.Errorf("default max_tokens of a model the catalogue lacks = %d, want 0 (the client's 4096)", got)
	}
	r := NewRouter(o)
	if _, ok := r.clients["anthropic"].(*anthropicClient); !ok {
		t.Errorf("anthropic is served by %T", r.clients["anthropic"])
	}
	if _, ok := r.clients["google"].(*geminiClient); !ok {
		t.Errorf("google is served by %T", r.clients["google"])
	}
	if _, ok := r.clients["gw"].(*endpointClient); !ok {
		t.Errorf("gw is served by %T", r.clients["gw"])
	}
}

func TestProviderProtocolErrors(t *testing.T) {
	cases := map[string]struct {
		env  map[string]string
		want string
	}{
		"unknown protocol": {map[string]string{"AGENT_MODEL_PROVIDERS": `{"x":{"baseURL":"https://x","protocol":"bedrock"}}`}, `protocol "bedrock" is not one of "openai"`},
		"bad gemini URL":   {map[string]string{"GEMINI_BASE_URL": "localhost:9"}, "GEMINI_BASE_URL"},
		"bad catalogue":    {map[string]string{"ANTHROPIC_API_KEY": "k", "MODEL_CATALOG": "/nonexistent/catalog.json"}, "fix MODEL_CATALOG"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := RouterOptionsFromEnv(envOf(tc.env))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v lacks %q", err, tc.want)
			}
		})
	}
}

// An AGENT_MODEL_PROVIDERS entry named "anthropic" (or "google") wins over
// the newer shorthand, as configurations written before it expect, even one
// naming ANTHROPIC_API_KEY as its key.
func TestAnExplicitEntryWinsOverTheNewShorthands(t *testing.T) {
	o, err := RouterOptionsFromEnv(envOf(map[string]string{"ANTHROPIC_API_KEY": "k",
		"AGENT_MODEL_PROVIDERS": `{"anthropic":{"baseURL":"https://compat.example/v1","apiKeyEnv":"ANTHROPIC_API_KEY"}}`}))
	if err != nil {
		t.Fatal(err)
	}
	ep := o.Endpoints["anthropic"]
	if ep.BaseURL != "https://compat.example/v1" || ep.APIKey != "k" || (ep.Protocol != ProtocolOpenAI && ep.Protocol != "") {
		t.Fatalf("the explicit entry should win: %+v", ep)
	}
	if _, err := RouterOptionsFromEnv(envOf(map[string]string{"OPENAI_API_KEY": "k", "AGENT_MODEL_PROVIDERS": `{"openai":{"baseURL":"https://x"}}`})); err == nil || !strings.Contains(err.Error(), "already configured by OPENAI_API_KEY") {
		t.Fatalf("openai configured twice is still refused: %v", err)
	}
}

func TestUnknownProviderNamesTheShorthands(t *testing.T) {
	r := NewRouter(RouterOptions{Endpoints: map[string]Endpoint{"openai": {BaseURL: "http://x/v1"}}})
	_, err := r.Complete(t.Context(), Request{Model: "anthropic/claude-sonnet-4-5", Messages: []Message{{Role: RoleUser, Content: "hi"}}})
	if err == nil {
		t.Fatal("expected an error")
	}
	for _, s := range []string{"ANTHROPIC_API_KEY", "GEMINI_API_KEY", "protocol openai, anthropic or google"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q lacks %q", err, s)
		}
	}
}
