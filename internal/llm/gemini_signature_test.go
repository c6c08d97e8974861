package llm

import (
	"bytes"
	"strings"
	"testing"

	"google.golang.org/genai"
)

// A function call's thoughtSignature is kept with the call and sent back
// with it; calls Gemini leaves unnamed get IDs unique across answers; a
// blocked prompt is a refusal.
func TestGeminiKeepsSignaturesAndNamesCallsUniquely(t *testing.T) {
	resp := &genai.GenerateContentResponse{Candidates: []*genai.Candidate{{FinishReason: genai.FinishReasonStop,
		Content: &genai.Content{Parts: []*genai.Part{{FunctionCall: &genai.FunctionCall{Name: "f", Args: map[string]any{}}, ThoughtSignature: []byte("sig")}}}}}}
	var a, b geminiAnswer
	a.add(resp, nil)
	b.add(resp, nil)
	ra, rb := a.response("google", "m"), b.response("google", "m")
	if len(ra.ToolCalls) != 1 || !bytes.Equal(ra.ToolCalls[0].Signature, []byte("sig")) {
		t.Fatalf("the signature is kept: %+v", ra.ToolCalls)
	}
	if ra.ToolCalls[0].ID == rb.ToolCalls[0].ID || !strings.HasPrefix(ra.ToolCalls[0].ID, "call_") {
		t.Fatalf("made-up IDs differ between answers: %q %q", ra.ToolCalls[0].ID, rb.ToolCalls[0].ID)
	}
	contents, _, err := geminiRequest(Request{Model: "google/m", Messages: []Message{
		{Role: RoleUser, Content: "hi"},
		{Role: RoleAssistant, ToolCalls: ra.ToolCalls},
		{Role: RoleTool, ToolCallID: ra.ToolCalls[0].ID, Content: "ok"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var sent []byte
	for _, c := range contents {
		for _, p := range c.Parts {
			if p.FunctionCall != nil {
				sent = p.ThoughtSignature
			}
		}
	}
	if !bytes.Equal(sent, []byte("sig")) {
		t.Fatalf("the signature goes back with the call, got %q", sent)
	}

	var blocked geminiAnswer
	blocked.add(&genai.GenerateContentResponse{PromptFeedback: &genai.GenerateContentResponsePromptFeedback{BlockReason: "SAFETY"}}, nil)
	if r := blocked.response("google", "m"); r.StopReason != StopRefused || !strings.Contains(r.Text, "blocked the prompt: SAFETY") {
		t.Fatalf("a blocked prompt is a refusal: %+v", r)
	}
}
