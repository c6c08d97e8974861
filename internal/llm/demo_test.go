package llm

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// failingTransport proves the demo model never touches the network.
type failingTransport struct{}

func (failingTransport) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("network used")
}

func demoRouter() *Router {
	return NewRouter(RouterOptions{EnableDemo: true, HTTPClient: &http.Client{Transport: failingTransport{}}})
}

func TestDemoText(t *testing.T) {
	req := Request{Model: DemoModel, Messages: []Message{
		{Role: RoleSystem, Content: "sys"},
		{Role: RoleUser, Content: "first"},
		{Role: RoleAssistant, Content: "answer"},
		{Role: RoleUser, Content: "what is\n  the weather?"},
	}}
	resp, err := demoRouter().Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := "[offline demo model] You said: what is the weather?. Set OPENAI_API_KEY to talk to a real model."
	if resp.Text != want {
		t.Fatalf("text = %q", resp.Text)
	}
	if resp.Provider != "demo" || resp.Model != "offline" || resp.StopReason != StopEnd {
		t.Fatalf("got %+v", resp)
	}
	if resp.Usage.InputTokens != (3+5+6+22)/4 || resp.Usage.OutputTokens != len(want)/4 {
		t.Fatalf("usage = %+v", resp.Usage)
	}
	again, _ := demoRouter().Complete(context.Background(), req)
	if !reflect.DeepEqual(again, resp) {
		t.Fatal("demo model is not deterministic")
	}
	if got := demoRouter().Providers(); !reflect.DeepEqual(got, []string{"demo"}) {
		t.Fatalf("Providers() = %v", got)
	}
}

func TestDemoTruncates(t *testing.T) {
	long := strings.Repeat("é", 500)
	resp, err := demoRouter().Complete(context.Background(), hello("demo/anything"))
	if err != nil || resp.Model != "anything" {
		t.Fatalf("%+v %v", resp, err)
	}
	resp, err = demoRouter().Complete(context.Background(), Request{Model: DemoModel, Messages: []Message{{Role: RoleUser, Content: long}}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(resp.Text, strings.Repeat("é", 200)+"….") || strings.Contains(resp.Text, strings.Repeat("é", 201)) {
		t.Fatalf("not truncated to 200 chars: %q", resp.Text)
	}
}

func TestDemoJSONSchema(t *testing.T) {
	schema := map[string]any{
		"type":     "object",
		"required": []string{"message"},
		"properties": map[string]any{
			"message":    map[string]any{"type": "string"},
			"title":      map[string]any{"type": "string"},
			"count":      map[string]any{"type": "integer", "minimum": 3},
			"score":      map[string]any{"type": "number", "maximum": 0.5},
			"done":       map[string]any{"type": "boolean"},
			"tags":       map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
			"mood":       map[string]any{"type": "string", "enum": []string{"happy", "sad"}},
			"when":       map[string]any{"type": "string", "format": "date-time"},
			"maybe":      map[string]any{"type": []string{"null", "string"}},
			"nested":     map[string]any{"type": "object", "properties": map[string]any{"message": map[string]any{"type": "string"}, "n": map[string]any{"type": "number"}}},
			"ref":        map[string]any{"$ref": "#/$defs/item"},
			"choice":     map[string]any{"anyOf": []any{map[string]any{"type": "integer"}, map[string]any{"type": "string"}}},
			"everything": map[string]any{},
		},
		"$defs": map[string]any{"item": map[string]any{"type": "object", "properties": map[string]any{"id": map[string]any{"type": "string", "format": "uuid"}}}},
	}
	req := Request{Model: DemoModel, Messages: []Message{{Role: RoleUser, Content: "hi"}}, JSONSchema: schema}
	resp, err := demoRouter().Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(resp.Text), &got); err != nil {
		t.Fatalf("not JSON: %q", resp.Text)
	}
	want := map[string]any{
		"message":    "[offline demo model] You said: hi. Set OPENAI_API_KEY to talk to a real model.",
		"title":      "demo title",
		"count":      3.0,
		"score":      0.5,
		"done":       false,
		"tags":       []any{"demo tag"},
		"mood":       "happy",
		"when":       "2024-01-01T00:00:00Z",
		"maybe":      "demo maybe",
		"nested":     map[string]any{"message": "demo message", "n": 1.0},
		"ref":        map[string]any{"id": "00000000-0000-4000-8000-000000000000"},
		"choice":     1.0,
		"everything": nil,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %v\nwant %v", got, want)
	}
}

func TestDemoRecursiveSchemaTerminates(t *testing.T) {
	schema := map[string]any{"$ref": "#"}
	req := Request{Model: DemoModel, Messages: []Message{{Role: RoleUser, Content: "hi"}}, JSONSchema: schema}
	if _, err := demoRouter().Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
}

func TestDemoHonoursCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := demoRouter().Complete(ctx, hello(DemoModel))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

func TestDemoStreams(t *testing.T) {
	for name, req := range map[string]Request{
		"text":   {Model: DemoModel, Messages: []Message{{Role: RoleUser, Content: "what is  the weather?"}}},
		"schema": {Model: DemoModel, Messages: []Message{{Role: RoleUser, Content: "hi"}}, JSONSchema: map[string]any{"type": "object", "properties": map[string]any{"message": map[string]any{"type": "string"}}}},
	} {
		t.Run(name, func(t *testing.T) {
			plain, err := demoRouter().Complete(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			var deltas []string
			req.OnText = func(d string) { deltas = append(deltas, d) }
			resp, err := demoRouter().Complete(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(resp, plain) {
				t.Fatalf("streamed %+v, plain %+v", resp, plain)
			}
			if len(deltas) < 3 || strings.Join(deltas, "") != resp.Text {
				t.Fatalf("deltas %q do not make up %q", deltas, resp.Text)
			}
			for _, d := range deltas[:len(deltas)-1] {
				if !strings.HasSuffix(d, " ") || strings.TrimSpace(d) == "" || strings.Contains(strings.TrimRight(d, " "), " ") {
					t.Fatalf("delta %q is not one word and its spaces", d)
				}
			}
		})
	}
}

func TestDemoDeltas(t *testing.T) {
	for in, want := range map[string][]string{
		"":          nil,
		"a":         {"a"},
		"a b":       {"a ", "b"},
		"a  b ":     {"a  ", "b "},
		" a":        {" ", "a"},
		"{\"m\":1}": {"{\"m\":1}"},
	} {
		if got := SplitWords(in); !reflect.DeepEqual(got, want) {
			t.Errorf("SplitWords(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDemoStreamCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := hello(DemoModel)
	n := 0
	req.OnText = func(string) { n++; cancel() }
	_, err := demoRouter().Complete(ctx, req)
	if !errors.Is(err, context.Canceled) || n != 1 {
		t.Fatalf("err = %v after %d deltas", err, n)
	}
}
