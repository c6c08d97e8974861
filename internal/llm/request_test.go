package llm

import (
	"context"
	"encoding/json"
	"testing"
)

// The body openai-go sends is the one the hand-written wire types sent
// before it (these strings are theirs): content parts, an assistant's null
// content beside tool calls, tools, every option, and the stream's fields.
func TestRequestBodyAsBeforeOpenAIGo(t *testing.T) {
	temp, topP := 0.3, 0.9
	cases := []struct {
		req  Request
		want string
	}{{
		Request{Model: "test/m", Messages: []Message{
			{Role: RoleSystem, Content: "sys"},
			{Role: RoleUser, Content: "look", Parts: []Part{{Type: "text", Text: "look"}, {Type: "image_url", ImageURL: "data:image/png;base64,AAA"}, {Type: "file", FileName: "a.pdf", FileData: "data:application/pdf;base64,BBB"}, {Type: "text"}}},
			{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c1", Name: "search", Arguments: `{"q":1}`}}},
			{Role: RoleTool, ToolCallID: "c1", Content: "result"},
			{Role: RoleAssistant, Content: ""},
		},
			Tools:     []Tool{{Name: "search", Description: "finds", Parameters: map[string]any{"type": "object"}}, {Name: "bare"}},
			MaxTokens: 100, Temperature: &temp, TopP: &topP, ReasoningEffort: "low", JSONObject: true,
		},
		`{"max_tokens":100,"messages":[{"content":"sys","role":"system"},{"content":[{"text":"look","type":"text"},{"image_url":{"url":"data:image/png;base64,AAA"},"type":"image_url"},{"file":{"file_data":"data:application/pdf;base64,BBB","filename":"a.pdf"},"type":"file"},{"type":"text"}],"role":"user"},{"content":null,"role":"assistant","tool_calls":[{"function":{"arguments":"{\"q\":1}","name":"search"},"id":"c1","type":"function"}]},{"content":"result","role":"tool","tool_call_id":"c1"},{"content":"","role":"assistant"}],"model":"m","reasoning_effort":"low","response_format":{"type":"json_object"},"stream":false,"temperature":0.3,"tools":[{"function":{"description":"finds","name":"search","parameters":{"type":"object"}},"type":"function"},{"function":{"name":"bare"},"type":"function"}],"top_p":0.9}`,
	}, {
		Request{Model: "test/m", Messages: []Message{{Role: RoleUser, Content: "x"}}, OnText: func(string) {}},
		`{"messages":[{"content":"x","role":"user"}],"model":"m","stream":true,"stream_options":{"include_usage":true}}`,
	}, {
		// Parts on another role, and roles and part types openai-go does not type.
		Request{Model: "test/m", Messages: []Message{
			{Role: RoleSystem, Parts: []Part{{Type: "text", Text: "s"}, {Type: "image_url", ImageURL: "u"}}},
			{Role: "developer", Content: "d"},
			{Role: RoleUser, Parts: []Part{{Type: "input_audio", Text: "z"}}},
		}},
		`{"messages":[{"content":[{"text":"s","type":"text"},{"image_url":{"url":"u"},"type":"image_url"}],"role":"system"},{"content":"d","role":"developer"},{"content":[{"text":"z","type":"input_audio"}],"role":"user"}],"model":"m","stream":false}`,
	}}
	for i, c := range cases {
		var f *fakeEndpoint
		if c.req.OnText != nil {
			f = newFakeEndpoint(t, streamReply(textChunk("x"), chunk(map[string]any{}, "stop"), "[DONE]"))
		} else {
			f = newFakeEndpoint(t, reply(200, completion("x", "stop")))
		}
		if _, err := routerFor(f, "").Complete(context.Background(), c.req); err != nil {
			t.Fatal(err)
		}
		got, _ := json.Marshal(f.lastBody(t))
		if string(got) != c.want {
			t.Errorf("request %d body\n got %s\nwant %s", i, got, c.want)
		}
	}
}

// openai.NewClient would read these and send them to every provider.
func TestNoOpenAIEnvironmentSent(t *testing.T) {
	t.Setenv("OPENAI_ORG_ID", "org-x")
	t.Setenv("OPENAI_PROJECT_ID", "proj-x")
	t.Setenv("OPENAI_API_KEY", "sk-env")
	t.Setenv("OPENAI_CUSTOM_HEADERS", "X-Leak: 1")
	f := newFakeEndpoint(t, reply(200, completion("x", "stop")))
	if _, err := routerFor(f, "").Complete(context.Background(), hello("test/m")); err != nil {
		t.Fatal(err)
	}
	h := f.lastHeader(t)
	for _, k := range []string{"Authorization", "Openai-Organization", "Openai-Project", "X-Leak"} {
		if v, ok := h[k]; ok {
			t.Errorf("%s sent: %q", k, v)
		}
	}
}
