package llm

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// The request body built without encoding the conversation twice is the
// body json.Marshal writes, byte for byte, whatever the request holds.
func TestEncodeChatRequestIsJSONMarshal(t *testing.T) {
	temp, topP := 0.25, 0.9
	long := strings.Repeat("a long turn <b>&\u2028 \"quoted\" \\ ", 500)
	reqs := map[string]struct {
		model string
		req   Request
	}{
		"empty": {"m", Request{}},
		"text turns": {"gpt-x", Request{Messages: []Message{
			{Role: RoleSystem, Content: "Answer briefly."},
			{Role: RoleUser, Content: long},
			{Role: RoleAssistant, Content: "écho: 日本語 <ok> & done"},
			{Role: RoleUser, Content: ""},
			{Role: Role("odd role\""), Content: "not one the runtime sends"},
		}, MaxTokens: 200, Temperature: &temp, TopP: &topP, ReasoningEffort: "low"}},
		"tools and calls": {"m", Request{Messages: []Message{
			{Role: RoleUser, Content: "call it"},
			{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c1", Name: "save", Arguments: `{"v":"<x>"}`}}},
			{Role: RoleAssistant, Content: "and text", ToolCalls: []ToolCall{{ID: "c2", Name: "b", Arguments: "{}"}}},
			{Role: RoleTool, ToolCallID: "c1", Content: `{"ok":true}`},
		}, Tools: []Tool{{Name: "save", Description: "Saves <it>.", Parameters: map[string]any{"type": "object", "properties": map[string]any{"v": map[string]any{"type": "string"}}}}}}},
		"parts": {"m", Request{Messages: []Message{{Role: RoleUser, Parts: []Part{
			{Type: "text", Text: "see"},
			{Type: "image_url", ImageURL: "data:image/png;base64,AAAA"},
			{Type: "file", FileName: "a.pdf", FileData: "data:application/pdf;base64,BBBB"},
		}}}}},
		"streamed JSON schema": {"m", Request{Messages: []Message{{Role: RoleUser, Content: "x"}},
			OnText: func(string) {}, JSONSchema: map[string]any{"type": "object"}, SchemaName: "out"}},
		"json object": {"m", Request{Messages: []Message{{Role: RoleUser, Content: "x"}}, JSONObject: true}},
		// The field it splices into cannot be faked by the model's name.
		"model name holding the field": {`a,"messages":null,"b`, Request{Messages: []Message{{Role: RoleUser, Content: "x"}}}},
	}
	c := &endpointClient{}
	for name, r := range reqs {
		cr := c.buildRequest(r.model, r.req)
		want, werr := json.Marshal(cr)
		got, gerr := encodeChatRequest(cr)
		if werr != nil || gerr != nil {
			t.Fatalf("%s: errors %v, %v", name, werr, gerr)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
	}
}
