package testmodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/agenttask/agenttask/internal/llm"
)

// The Gemini API: POST /v1beta/models/{model}:generateContent, and
// :streamGenerateContent?alt=sse for a stream of the same responses.

var geminiProtocol = protocol{
	name:               ProtocolGemini,
	parse:              parseGemini,
	writeError:         writeGeminiError,
	writeContextLength: writeGeminiContextLength,
	writeReply:         writeGeminiReply,
	writeStream:        (*Server).writeGeminiStream,
}

type geminiPart struct {
	Text       string `json:"text,omitempty"`
	Thought    bool   `json:"thought,omitempty"`
	InlineData *struct {
		MIMEType string `json:"mimeType"`
		Data     string `json:"data"`
	} `json:"inlineData,omitempty"`
	FileData *struct {
		FileURI string `json:"fileUri"`
	} `json:"fileData,omitempty"`
	FunctionCall     *geminiCall `json:"functionCall,omitempty"`
	FunctionResponse *struct {
		ID       string         `json:"id"`
		Name     string         `json:"name"`
		Response map[string]any `json:"response"`
	} `json:"functionResponse,omitempty"`
}

type geminiCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

type geminiContent struct {
	Role  string       `json:"role,omitempty"`
	Parts []geminiPart `json:"parts"`
}

type geminiRequest struct {
	Contents          []geminiContent `json:"contents"`
	SystemInstruction *geminiContent  `json:"systemInstruction"`
	Tools             []struct {
		FunctionDeclarations []struct {
			Name string `json:"name"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
	GenerationConfig *struct {
		MaxOutputTokens    int            `json:"maxOutputTokens"`
		Temperature        *float64       `json:"temperature"`
		ResponseJSONSchema map[string]any `json:"responseJsonSchema"`
	} `json:"generationConfig"`
}

func parseGemini(raw []byte, r *http.Request) (Call, error) {
	var req geminiRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		return Call{}, fmt.Errorf("request body is not a generateContent request: %v", err)
	}
	path := strings.TrimPrefix(r.URL.Path, "/v1beta/models/")
	model, method, _ := strings.Cut(path, ":")
	c := Call{Model: model, Stream: method == "streamGenerateContent", Raw: raw}
	if c.Stream && r.URL.Query().Get("alt") != "sse" {
		return Call{}, fmt.Errorf("streamGenerateContent: this server streams only with alt=sse")
	}
	if g := req.GenerationConfig; g != nil {
		c.MaxTokens, c.Temperature, c.JSONSchema = g.MaxOutputTokens, g.Temperature, g.ResponseJSONSchema
	}
	for _, t := range req.Tools {
		for _, f := range t.FunctionDeclarations {
			c.Tools = append(c.Tools, f.Name)
		}
	}
	if si := req.SystemInstruction; si != nil {
		var t []string
		for _, p := range si.Parts {
			t = append(t, p.Text)
		}
		c.Messages = append(c.Messages, Message{Role: "system", Content: strings.Join(t, "\n")})
	}
	for i, content := range req.Contents {
		role := "user"
		switch content.Role {
		case "model":
			role = "assistant"
		case "user", "":
		default:
			return Call{}, fmt.Errorf("contents[%d].role: %q is neither user nor model", i, content.Role)
		}
		c.Messages = append(c.Messages, geminiMessages(role, content.Parts)...)
	}
	if err := checkToolOrder(c.Messages); err != nil {
		return Call{}, err
	}
	c.cache = implicitKey(c.Messages)
	return c, nil
}

func geminiMessages(role string, parts []geminiPart) []Message {
	var out []Message
	m := Message{Role: role}
	for _, p := range parts {
		switch {
		case p.Thought:
		case p.FunctionResponse != nil:
			text, _ := json.Marshal(p.FunctionResponse.Response)
			if s, ok := p.FunctionResponse.Response["output"].(string); ok {
				text = []byte(s)
			}
			out = append(out, Message{Role: "tool", ToolCallID: p.FunctionResponse.ID, Content: string(text)})
		case p.FunctionCall != nil:
			args := string(p.FunctionCall.Args)
			if args == "" {
				args = "{}"
			}
			m.ToolCalls = append(m.ToolCalls, ToolCall{ID: p.FunctionCall.ID, Name: p.FunctionCall.Name, Arguments: args})
		case p.InlineData != nil:
			u := "data:" + p.InlineData.MIMEType + ";base64," + p.InlineData.Data
			if strings.HasPrefix(p.InlineData.MIMEType, "image/") {
				m.Images = append(m.Images, u)
			} else {
				m.Files = append(m.Files, u)
			}
		case p.FileData != nil:
			m.Files = append(m.Files, p.FileData.FileURI)
		default:
			m.Content += p.Text
		}
	}
	if m.Content != "" || len(m.Images) > 0 || len(m.Files) > 0 || len(m.ToolCalls) > 0 || len(out) == 0 {
		out = append(out, m)
	}
	return out
}

// geminiFinish is the finishReason of an answer.
func geminiFinish(a answer) string {
	switch {
	case a.refusal != "":
		return "SAFETY"
	case a.finish == "length":
		return "MAX_TOKENS"
	}
	return "STOP"
}

func geminiUsage(a answer) map[string]any {
	u := map[string]any{"promptTokenCount": a.prompt, "candidatesTokenCount": a.completion, "totalTokenCount": a.prompt + a.completion}
	if a.cached > 0 {
		u["cachedContentTokenCount"] = a.cached
	}
	return u
}

// geminiResponse is one response (or chunk): parts, then the finish and
// usage when last.
func geminiResponse(c Call, parts []geminiPart, finish string, usage map[string]any) map[string]any {
	if parts == nil {
		parts = []geminiPart{}
	}
	cand := map[string]any{"index": 0, "content": geminiContent{Role: "model", Parts: parts}}
	if finish != "" {
		cand["finishReason"] = finish
	}
	out := map[string]any{"candidates": []any{cand}, "modelVersion": c.Model, "responseId": fmt.Sprintf("testmodel-%d", c.Seq)}
	if usage != nil {
		out["usageMetadata"] = usage
	}
	return out
}

func geminiCalls(a answer) []geminiPart {
	var out []geminiPart
	for _, tc := range a.calls {
		out = append(out, geminiPart{FunctionCall: &geminiCall{ID: tc.ID, Name: tc.Function.Name, Args: toolArgs(tc.Function.Arguments)}})
	}
	return out
}

func writeGeminiReply(w http.ResponseWriter, c Call, r Reply) {
	if writeScripted(w, r, writeGeminiError) {
		return
	}
	a := prepare(c, r)
	var parts []geminiPart
	if t := a.text + a.refusal; t != "" {
		parts = append(parts, geminiPart{Text: t})
	}
	parts = append(parts, geminiCalls(a)...)
	writeJSON(w, http.StatusOK, geminiResponse(c, parts, geminiFinish(a), geminiUsage(a)))
}

func (s *Server) writeGeminiStream(w http.ResponseWriter, r *http.Request, c Call, rep Reply) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	send := func(v any) bool {
		b, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		if _, err := fmt.Fprintf(w, "data: %s\r\n\r\n", b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	a := prepare(c, rep)
	text := rep.Chunks
	if len(text) == 0 || a.refusal != "" {
		text = llm.SplitWords(a.text + a.refusal)
	}
	for i, t := range text {
		if rep.BreakAfter > 0 && i == rep.BreakAfter {
			panic(http.ErrAbortHandler)
		}
		if rep.BeforeChunk != nil && !s.beforeChunk(r, rep.BeforeChunk, i) {
			return
		}
		if i == 0 {
			s.mu.Lock()
			s.firstChunk[c.Seq] = time.Now()
			s.mu.Unlock()
		}
		if !send(geminiResponse(c, []geminiPart{{Text: t}}, "", nil)) {
			return
		}
	}
	if rep.BreakAfter > 0 {
		panic(http.ErrAbortHandler)
	}
	send(geminiResponse(c, geminiCalls(a), geminiFinish(a), geminiUsage(a)))
}

// geminiStatus is the google.rpc status name of an HTTP status.
func geminiStatus(code int) string {
	switch code {
	case http.StatusBadRequest:
		return "INVALID_ARGUMENT"
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	case http.StatusServiceUnavailable:
		return "UNAVAILABLE"
	}
	return "INTERNAL"
}

func writeGeminiError(w http.ResponseWriter, status int, msg string) {
	if msg == "" {
		msg = http.StatusText(status)
	}
	writeJSON(w, status, map[string]any{"error": map[string]any{"code": status, "message": msg, "status": geminiStatus(status)}})
}

func writeGeminiContextLength(w http.ResponseWriter, limit, tokens int) {
	writeGeminiError(w, http.StatusBadRequest, fmt.Sprintf("The input token count (%d) exceeds the maximum number of tokens allowed (%d).", tokens, limit))
}
