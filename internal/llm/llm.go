// Package llm is a small client for OpenAI-compatible chat-completions
// endpoints, with routing by model prefix ("provider/name").
//
// It makes exactly one HTTP attempt per call: retries and backoff belong to the
// caller (a Temporal activity retry policy), which decides from Error.Retryable
// and Error.RetryAfter.
package llm

import (
	"context"

	"github.com/agenttask/agenttask/contract"
)

// Role is the author of a chat message.
type Role string

const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one chat message. Content is plain text; Parts, when set,
// replaces it with a list of typed parts (text, images, files).
type Message struct {
	Role       Role
	Content    string
	Parts      []Part
	ToolCalls  []ToolCall // an assistant message that called tools
	ToolCallID string     // a tool message: the call it answers
}

// Part is one piece of multi-part content, as the chat-completions protocol
// takes it: "text", "image_url" (a URL or a data: URL) or "file" (a data: URL).
type Part struct {
	Type     string
	Text     string
	ImageURL string
	FileName string
	FileData string
}

// Tool is a function the model may call.
type Tool struct {
	Name        string
	Description string
	Parameters  map[string]any // a JSON Schema object
}

// ToolCall is one call the model asked for; Arguments is JSON text.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	// Signature is the provider's opaque signature of the call (Gemini's
	// thoughtSignature), which it wants back with the call in later requests.
	Signature []byte `json:"signature,omitempty"`
}

// Request is one chat completion.
type Request struct {
	// Model is "provider/name", e.g. "openai/gpt-4o-mini"; the router strips
	// the provider before calling the endpoint.
	Model    string
	Messages []Message
	// MaxTokens limits the answer; 0 leaves the provider default. Sent as
	// max_tokens, the field the most OpenAI-compatible servers understand.
	MaxTokens int
	// Temperature and TopP are omitted when nil.
	Temperature *float64
	TopP        *float64
	// ReasoningEffort (low, medium, high) is omitted when "".
	ReasoningEffort string
	// JSONObject asks for one JSON object (response_format json_object)
	// when there is no JSONSchema.
	JSONObject bool
	// JSONSchema, when non-nil, asks for structured output via
	// response_format {"type":"json_schema",...} with strict=false.
	JSONSchema map[string]any
	// SchemaName names the schema for the endpoint; "output" when empty.
	SchemaName string
	// Tools the model may call this request.
	Tools []Tool
	// OnText, when set, streams the answer: the endpoint is asked for
	// server-sent events and OnText receives each piece of text (answer or
	// refusal) as soon as it arrives, in order, on the calling goroutine,
	// before Complete returns. The Response is the same as without OnText.
	// Pieces already delivered stay delivered when Complete then fails (a
	// cut stream is retryable), so a caller that shows them must be ready to
	// discard them; to know whether any text was delivered, wrap the func.
	// Nil keeps the plain request/response exchange.
	OnText func(delta string) `json:"-"`
}

// StopReason says why the model stopped.
type StopReason string

const (
	StopEnd       StopReason = "end"
	StopMaxTokens StopReason = "max_tokens"
	StopRefused   StopReason = "refused"
)

// Response is the model's answer.
type Response struct {
	// Text is the answer, or the refusal when the model refused.
	Text       string
	StopReason StopReason
	// Usage is the token accounting the endpoint reported (zeros when it
	// did not), the same for every provider: InputTokens counts all prompt
	// tokens, cached ones included (OpenAI's prompt_tokens); CacheReadTokens
	// of them were read from the provider's prompt cache, CacheWriteTokens
	// written to it. Each provider's report is converted once, by its
	// client (openAIUsage, anthropicUsage, geminiUsage).
	Usage contract.Usage
	// Model is the model name the endpoint reports (the requested name when it reports none).
	Model    string
	Provider string
	// ToolCalls the model asked for instead of (or beside) an answer.
	ToolCalls []ToolCall
}

// Client completes chat requests. Failures are *Error.
type Client interface {
	Complete(ctx context.Context, req Request) (Response, error)
}
