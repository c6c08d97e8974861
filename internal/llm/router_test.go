package llm

import (
	"context"
	"slices"
	"strings"
	"testing"
)

func TestRouting(t *testing.T) {
	a := newFakeEndpoint(t, reply(200, completion("from a", "stop")))
	b := newFakeEndpoint(t, reply(200, completion("from b", "stop")))
	r := NewRouter(RouterOptions{Endpoints: map[string]Endpoint{
		"alpha": {BaseURL: a.URL + "/v1", APIKey: "ka"},
		"beta":  {BaseURL: b.URL + "/v1", APIKey: "kb"},
	}})
	for model, want := range map[string]string{"alpha/m1": "from a", "beta/vendor/m2": "from b"} {
		resp, err := r.Complete(context.Background(), hello(model))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Text != want {
			t.Errorf("%s answered %q, want %q", model, resp.Text, want)
		}
	}
	if got := a.lastBody(t)["model"]; got != "m1" {
		t.Errorf("alpha got model %v, want the provider stripped", got)
	}
	if got := b.lastBody(t)["model"]; got != "vendor/m2" {
		t.Errorf("beta got model %v", got)
	}
	if got := b.lastHeader(t).Get("Authorization"); got != "Bearer kb" {
		t.Errorf("beta got Authorization %q", got)
	}
	if got := r.Providers(); !slices.Equal(got, []string{"alpha", "beta"}) {
		t.Errorf("Providers() = %v", got)
	}
}

func TestUnknownProvider(t *testing.T) {
	r := NewRouter(RouterOptions{Endpoints: map[string]Endpoint{"openai": {BaseURL: "http://127.0.0.1:1/v1"}}, EnableDemo: true})
	_, err := r.Complete(context.Background(), hello("groq/llama"))
	e := asError(t, err)
	if !e.Retryable {
		t.Fatal("an unknown provider is retryable: another worker, or this one reconfigured, may serve it")
	}
	for _, want := range []string{`"groq"`, "demo, openai", EnvModelProviders, EnvOpenAIAPIKey, "GROQ_API_KEY"} {
		if !strings.Contains(e.Message, want) {
			t.Errorf("message %q lacks %q", e.Message, want)
		}
	}
}

func TestBadModelNames(t *testing.T) {
	r := NewRouter(RouterOptions{EnableDemo: true})
	for _, model := range []string{"", "gpt-4o", "/gpt", "openai/"} {
		_, err := r.Complete(context.Background(), hello(model))
		if e := asError(t, err); e.Retryable || !strings.Contains(e.Message, "provider/name") {
			t.Errorf("model %q: got %+v", model, e)
		}
	}
	_, err := r.Complete(context.Background(), Request{Model: DemoModel})
	if e := asError(t, err); e.Retryable || !strings.Contains(e.Message, "no messages") {
		t.Errorf("empty messages: got %+v", e)
	}
}

func TestDemoDisabledMessage(t *testing.T) {
	r := NewRouter(RouterOptions{Endpoints: map[string]Endpoint{"openai": {BaseURL: "http://127.0.0.1:1/v1"}}})
	_, err := r.Complete(context.Background(), hello(DemoModel))
	e := asError(t, err)
	if !e.Retryable || !strings.Contains(e.Message, "disabled") || !strings.Contains(e.Message, "openai") {
		t.Fatalf("got %+v", e)
	}
}

func TestRouterCopiesEndpoints(t *testing.T) {
	eps := map[string]Endpoint{"x": {BaseURL: "http://127.0.0.1:1/v1"}}
	r := NewRouter(RouterOptions{Endpoints: eps})
	eps["y"] = Endpoint{BaseURL: "http://127.0.0.1:1/v1"}
	if got := r.Providers(); !slices.Equal(got, []string{"x"}) {
		t.Fatalf("Providers() = %v after mutating the options", got)
	}
}
