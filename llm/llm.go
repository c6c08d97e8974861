// Package llm is a small client for OpenAI-compatible chat-completions
// endpoints, with routing by model prefix ("provider/name").
//
// It makes exactly one HTTP attempt per call: retries and backoff belong to the
// caller (a Temporal activity retry policy), which decides from Error.Retryable
// and Error.RetryAfter.
package llm

import "context"

// Role is the author of a chat message.
type Role string

const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// Message is one chat message.
type Message struct {
	Role    Role   `json:"role"`
	Content string `json:"content"`
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
	// Temperature is omitted when nil.
	Temperature *float64
	// JSONSchema, when non-nil, asks for structured output via
	// response_format {"type":"json_schema",...} with strict=false.
	JSONSchema map[string]any
	// SchemaName names the schema for the endpoint; "output" when empty.
	SchemaName string
}

// StopReason says why the model stopped.
type StopReason string

const (
	StopEnd       StopReason = "end"
	StopMaxTokens StopReason = "max_tokens"
	StopRefused   StopReason = "refused"
)

// Usage is the token accounting the endpoint reported (zeros when it did not).
type Usage struct {
	InputTokens  int `json:"inputTokens"`
	OutputTokens int `json:"outputTokens"`
}

// Response is the model's answer.
type Response struct {
	// Text is the answer, or the refusal when the model refused.
	Text       string
	StopReason StopReason
	Usage      Usage
	// Model is the model name the endpoint reports (the requested name when it reports none).
	Model    string
	Provider string
}

// Client completes chat requests. Failures are *Error.
type Client interface {
	Complete(ctx context.Context, req Request) (Response, error)
}
