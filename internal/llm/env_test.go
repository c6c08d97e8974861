package llm

import (
	"reflect"
	"strings"
	"testing"
)

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestRouterOptionsFromEnv(t *testing.T) {
	cases := []struct {
		name      string
		env       map[string]string
		endpoints map[string]Endpoint
		demo      bool
	}{
		{name: "nothing configured: demo only", env: nil, endpoints: map[string]Endpoint{}, demo: true},
		{
			name:      "openai key uses the default base URL",
			env:       map[string]string{"OPENAI_API_KEY": " sk-1 "},
			endpoints: map[string]Endpoint{"openai": {BaseURL: DefaultOpenAIBaseURL, APIKey: "sk-1"}},
		},
		{
			name:      "openai key and base URL",
			env:       map[string]string{"OPENAI_API_KEY": "sk-1", "OPENAI_BASE_URL": "https://proxy.example/v1"},
			endpoints: map[string]Endpoint{"openai": {BaseURL: "https://proxy.example/v1", APIKey: "sk-1"}},
		},
		{
			name:      "base URL alone configures a keyless openai endpoint",
			env:       map[string]string{"OPENAI_BASE_URL": "http://localhost:8000/v1"},
			endpoints: map[string]Endpoint{"openai": {BaseURL: "http://localhost:8000/v1"}},
		},
		{
			name: "extra providers",
			env: map[string]string{
				"AGENT_MODEL_PROVIDERS": `{"groq":{"baseURL":"https://api.groq.com/openai/v1","apiKeyEnv":"GROQ_API_KEY"},"local":{"baseURL":"http://localhost:11434/v1"}}`,
				"GROQ_API_KEY":          "gsk-2",
			},
			endpoints: map[string]Endpoint{
				"groq":  {BaseURL: "https://api.groq.com/openai/v1", APIKey: "gsk-2"},
				"local": {BaseURL: "http://localhost:11434/v1"},
			},
		},
		{
			name: "openai plus extra providers",
			env: map[string]string{
				"OPENAI_API_KEY":        "sk-1",
				"AGENT_MODEL_PROVIDERS": `{"local":{"baseURL":"http://localhost:11434/v1"}}`,
			},
			endpoints: map[string]Endpoint{
				"openai": {BaseURL: DefaultOpenAIBaseURL, APIKey: "sk-1"},
				"local":  {BaseURL: "http://localhost:11434/v1"},
			},
		},
		{
			name:      "an empty provider object configures nothing",
			env:       map[string]string{"AGENT_MODEL_PROVIDERS": `{}`},
			endpoints: map[string]Endpoint{},
			demo:      true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, err := RouterOptionsFromEnv(envOf(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(o.Endpoints, tc.endpoints) {
				t.Errorf("endpoints = %+v, want %+v", o.Endpoints, tc.endpoints)
			}
			if o.EnableDemo != tc.demo {
				t.Errorf("EnableDemo = %v, want %v", o.EnableDemo, tc.demo)
			}
		})
	}
}

func TestDemoNeverEnabledWithRealEndpoint(t *testing.T) {
	for _, env := range []map[string]string{
		{"OPENAI_API_KEY": "sk-1"},
		{"OPENAI_BASE_URL": "http://localhost:1234/v1"},
		{"AGENT_MODEL_PROVIDERS": `{"local":{"baseURL":"http://localhost:11434/v1"}}`},
	} {
		o, err := RouterOptionsFromEnv(envOf(env))
		if err != nil {
			t.Fatal(err)
		}
		if o.EnableDemo {
			t.Errorf("%v: demo enabled alongside a real endpoint", env)
		}
		if got := NewRouter(o).Providers(); len(got) != 1 || got[0] == DemoProvider {
			t.Errorf("%v: providers = %v", env, got)
		}
	}
}

func TestRouterOptionsFromEnvErrors(t *testing.T) {
	cases := map[string]struct {
		env  map[string]string
		want string
	}{
		"not json":           {map[string]string{"AGENT_MODEL_PROVIDERS": `groq=https://x`}, "must be a JSON object"},
		"typo field":         {map[string]string{"AGENT_MODEL_PROVIDERS": `{"groq":{"url":"https://x/v1"}}`}, `unknown field "url"`},
		"missing baseURL":    {map[string]string{"AGENT_MODEL_PROVIDERS": `{"groq":{"apiKeyEnv":"K"}}`, "K": "v"}, "base URL is required"},
		"relative baseURL":   {map[string]string{"AGENT_MODEL_PROVIDERS": `{"groq":{"baseURL":"api.groq.com"}}`}, "absolute http(s) URL"},
		"unset key var":      {map[string]string{"AGENT_MODEL_PROVIDERS": `{"groq":{"baseURL":"https://x/v1","apiKeyEnv":"GROQ_API_KEY"}}`}, "GROQ_API_KEY, which is not set"},
		"reserved demo":      {map[string]string{"AGENT_MODEL_PROVIDERS": `{"demo":{"baseURL":"https://x/v1"}}`}, "reserved"},
		"slash in name":      {map[string]string{"AGENT_MODEL_PROVIDERS": `{"a/b":{"baseURL":"https://x/v1"}}`}, "must not contain"},
		"openai twice":       {map[string]string{"OPENAI_API_KEY": "sk", "AGENT_MODEL_PROVIDERS": `{"openai":{"baseURL":"https://x/v1"}}`}, "already configured"},
		"bad openai URL":     {map[string]string{"OPENAI_BASE_URL": "ftp://x"}, "OPENAI_BASE_URL"},
		"trailing data":      {map[string]string{"AGENT_MODEL_PROVIDERS": `{} {}`}, "unexpected data"},
		"credentials hidden": {map[string]string{"OPENAI_BASE_URL": "ftp://user:hunter2@x/v1"}, "user:xxxxx@"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := RouterOptionsFromEnv(envOf(tc.env))
			if err == nil {
				t.Fatal("expected an error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q lacks %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("error leaks a password: %q", err)
			}
		})
	}
}

func TestOpenAIProviderMayComeFromJSONAlone(t *testing.T) {
	o, err := RouterOptionsFromEnv(envOf(map[string]string{"AGENT_MODEL_PROVIDERS": `{"openai":{"baseURL":"https://gw.example/v1","apiKeyEnv":"GW_KEY"}}`, "GW_KEY": "k"}))
	if err != nil {
		t.Fatal(err)
	}
	if got := o.Endpoints["openai"]; got != (Endpoint{BaseURL: "https://gw.example/v1", APIKey: "k"}) {
		t.Fatalf("openai = %+v", got)
	}
}
