package testmodel

import (
	"fmt"
	"net/http"
)

// SetContextLimit makes the server refuse, as OpenAI does, every request
// whose estimated prompt is over tokens: HTTP 400 with code
// context_length_exceeded, before the handler is asked. The estimate is
// Call.Tokens. 0 (the default) refuses nothing.
func (s *Server) SetContextLimit(tokens int) {
	s.mu.Lock()
	s.contextLimit = tokens
	s.mu.Unlock()
}

// promptTokens is the server's estimate of a request's prompt: the bytes of
// its messages' text (content, text parts and tool calls' arguments) over 4,
// the rule of thumb for English. Images and files are not counted.
func promptTokens(msgs []Message) int {
	n := 0
	for _, m := range msgs {
		n += len(m.Content)
		for _, tc := range m.ToolCalls {
			n += len(tc.Arguments)
		}
	}
	return n / 4
}

// writeContextLength answers OpenAI's refusal of a request over the context.
func writeContextLength(w http.ResponseWriter, limit, tokens int) {
	type errObj struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Param   string `json:"param"`
		Code    string `json:"code"`
	}
	writeJSON(w, http.StatusBadRequest, struct {
		Error errObj `json:"error"`
	}{errObj{
		Message: fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.", limit, tokens),
		Type:    "invalid_request_error", Param: "messages", Code: "context_length_exceeded",
	}})
}
