package agenttest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/llm"
)

// Model is a fake model: it answers each request with the next scripted
// Reply (or, past the script, with Handler's, or "echo: " and the last
// user message), and records every request it got.
type Model struct {
	mu       sync.Mutex
	script   []Reply
	handler  func(Request) Reply
	requests []Request
}

// NewModel is a model that answers with replies, in order.
func NewModel(replies ...Reply) *Model { return &Model{script: replies} }

// Then appends replies to the script.
func (m *Model) Then(replies ...Reply) *Model {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.script = append(m.script, replies...)
	return m
}

// Handle answers the requests the script does not cover.
func (m *Model) Handle(f func(Request) Reply) *Model {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.handler = f
	return m
}

// Requests are the requests the model got, oldest first.
func (m *Model) Requests() []Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Request(nil), m.requests...)
}

// Reply is one scripted answer: Text, or JSON (marshalled into the text),
// or ToolCalls (capabilities the model calls; their results come in the
// next request as tool messages).
type Reply struct {
	Text      string
	JSON      any
	ToolCalls []ToolCall
	Refuse    bool           // the model refuses (stop_reason "refused"), Text the refusal
	Usage     contract.Usage // the reply's token count (zero: 10 in, 5 out)
}

// ToolCall is a call the model asks for; Arguments is JSON text.
type ToolCall struct {
	ID, Name, Arguments string
}

// Request is what the model was sent.
type Request struct {
	Model    string
	Messages []Message
	// Tools are the names of the functions the model was offered (the
	// agent's capabilities, and the built-in save and finish).
	Tools []string
	// Schema is the JSON Schema the answer must fit (exposes, or the
	// shaping pass of StartArgs.Output); nil for plain text.
	Schema map[string]any
}

// Message is one message of a request: role system, user, assistant or
// tool, and its text.
type Message struct {
	Role       string
	Content    string
	ToolCalls  []ToolCall
	ToolCallID string
}

// LastUser is the text of the request's last user message.
func (r Request) LastUser() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == string(llm.RoleUser) {
			return r.Messages[i].Content
		}
	}
	return ""
}

// complete answers a request of the runtime (through modelClient, the
// runtime's model client over m).
func (m *Model) complete(_ context.Context, req llm.Request) (llm.Response, error) {
	r := requestOf(req)
	m.mu.Lock()
	m.requests = append(m.requests, r)
	var reply Reply
	switch {
	case len(m.script) > 0:
		reply, m.script = m.script[0], m.script[1:]
	case m.handler != nil:
		h := m.handler
		m.mu.Unlock()
		reply = h(r)
		m.mu.Lock()
	default:
		reply = Reply{Text: "echo: " + r.LastUser()}
	}
	m.mu.Unlock()
	return responseOf(req.Model, reply)
}

func requestOf(req llm.Request) Request {
	r := Request{Model: req.Model, Schema: req.JSONSchema}
	for _, t := range req.Tools {
		r.Tools = append(r.Tools, t.Name)
	}
	for _, msg := range req.Messages {
		text := msg.Content
		for _, p := range msg.Parts {
			text += p.Text
		}
		out := Message{Role: string(msg.Role), Content: text, ToolCallID: msg.ToolCallID}
		for _, c := range msg.ToolCalls {
			out.ToolCalls = append(out.ToolCalls, ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
		}
		r.Messages = append(r.Messages, out)
	}
	return r
}

func responseOf(model string, reply Reply) (llm.Response, error) {
	resp := llm.Response{Text: reply.Text, StopReason: llm.StopEnd, Model: model, Provider: "agenttest",
		Usage: reply.Usage}
	if resp.Usage == (contract.Usage{}) {
		resp.Usage = contract.Usage{InputTokens: 10, OutputTokens: 5}
	}
	if reply.JSON != nil {
		b, err := json.Marshal(reply.JSON)
		if err != nil {
			return resp, fmt.Errorf("agenttest: Reply.JSON does not marshal: %w", err)
		}
		resp.Text = string(b)
	}
	if reply.Refuse {
		resp.StopReason = llm.StopRefused
	}
	for i, c := range reply.ToolCalls {
		if c.ID == "" {
			c.ID = fmt.Sprintf("call_%d", i)
		}
		if c.Arguments == "" {
			c.Arguments = "{}"
		}
		resp.ToolCalls = append(resp.ToolCalls, llm.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
	}
	return resp, nil
}
