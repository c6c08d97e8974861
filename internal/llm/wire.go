package llm

import "encoding/json"

// The chat-completions wire shapes of messages and tools.

type wireMessage struct {
	Role       Role            `json:"role"`
	Content    json.RawMessage `json:"content"` // a string, a list of parts, or null beside tool calls
	ToolCalls  []wireToolCall  `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
}

type wirePart struct {
	Type     string         `json:"type"`
	Text     string         `json:"text,omitempty"`
	ImageURL *wireImageURL  `json:"image_url,omitempty"`
	File     *wireFileInput `json:"file,omitempty"`
}

type wireImageURL struct {
	URL string `json:"url"`
}

type wireFileInput struct {
	FileName string `json:"filename,omitempty"`
	FileData string `json:"file_data"`
}

type wireTool struct {
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Parameters  map[string]any `json:"parameters,omitempty"`
}

type wireToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

func wireMessages(ms []Message) []wireMessage {
	out := make([]wireMessage, len(ms))
	for i, m := range ms {
		w := wireMessage{Role: m.Role, ToolCallID: m.ToolCallID}
		switch {
		case len(m.Parts) > 0:
			parts := make([]wirePart, len(m.Parts))
			for j, p := range m.Parts {
				wp := wirePart{Type: p.Type, Text: p.Text}
				switch p.Type {
				case "image_url":
					wp.ImageURL = &wireImageURL{URL: p.ImageURL}
				case "file":
					wp.File = &wireFileInput{FileName: p.FileName, FileData: p.FileData}
				}
				parts[j] = wp
			}
			w.Content, _ = json.Marshal(parts)
		case m.Content == "" && len(m.ToolCalls) > 0:
			w.Content = json.RawMessage("null")
		default:
			w.Content, _ = json.Marshal(m.Content)
		}
		for _, tc := range m.ToolCalls {
			wtc := wireToolCall{ID: tc.ID, Type: "function"}
			wtc.Function.Name, wtc.Function.Arguments = tc.Name, tc.Arguments
			w.ToolCalls = append(w.ToolCalls, wtc)
		}
		out[i] = w
	}
	return out
}

func wireTools(ts []Tool) []wireTool {
	var out []wireTool
	for _, t := range ts {
		//lint:ignore S1016 the wire type and Tool change apart; a conversion would tie them
		out = append(out, wireTool{Type: "function", Function: wireFunction{Name: t.Name, Description: t.Description, Parameters: t.Parameters}})
	}
	return out
}
