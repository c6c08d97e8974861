package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"

	"github.com/agenttask/agenttask/internal/llm"
)

// bareModel is how the baselines ask a model: one chat-completions POST
// that carries the conversation so far (the user's inputs and the model's
// answers, oldest first, the turn's text last) to the same endpoint
// AgentTask calls, through the runtime's own HTTP client
// (llm.NewHTTPClient), so both sides reuse connections alike. It is the
// least a Temporal agent turn does to reach a model over HTTP: a model has
// no memory, so an agent sends it the conversation every turn. The
// baseline keeps its conversations in the worker's memory (bareChats),
// which is not durable, the least a loop can do. With it the model's own
// work (the endpoint's and the loopback's, on a request of the same size)
// is on both sides of a ratio, and what differs is the runtime's: the
// window it keeps durable and renders, the request it encodes, the answer
// it decodes and records. Until 2026-12-03 the loops answered in process
// (bareAnswerInProcess, still measured beside it, docs/bench.md), and then
// for one day sent only the turn's text.
type bareModel struct {
	url   string // the endpoint's base URL; the request goes to url+"/chat/completions"
	http  *http.Client
	chats *bareChats
}

func newBareModel(url string) bareModel {
	return bareModel{url: url, http: llm.NewHTTPClient(), chats: &bareChats{byID: map[string]*bareChat{}}}
}

// bareChats are the baselines' conversations by workflow ID.
type bareChats struct {
	mu   sync.Mutex
	byID map[string]*bareChat
}

// bareChat is one conversation: its messages and, for each request that
// was answered, its size as AgentTask's request_bytes counts a request
// (partsOf, internal/activities/prefix.go: the model's name, the tools and
// each message's role and texts, not the JSON around them).
type bareChat struct {
	messages []bareMessage
	requests []int
}

// requestSizes is the texts' bytes of each answered request of
// conversation id.
func (c *bareChats) requestSizes(id string) []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ch := c.byID[id]; ch != nil {
		return slices.Clone(ch.requests)
	}
	return nil
}

// bareRequest is the body: the model's name first and the user message
// last, as the runtime writes them (startLoadModel reads those two).
type bareRequest struct {
	Model    string        `json:"model"`
	Messages []bareMessage `json:"messages"`
}

type bareMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// ask returns the model's answer to text, the next message of
// conversation id. The turn's text and the answer join the conversation
// only once answered, so a retried attempt sends the same request.
func (m bareModel) ask(ctx context.Context, id, text string) (string, error) {
	m.chats.mu.Lock()
	ch := m.chats.byID[id]
	if ch == nil {
		ch = &bareChat{}
		m.chats.byID[id] = ch
	}
	messages := append(slices.Clip(ch.messages), bareMessage{Role: "user", Content: text})
	m.chats.mu.Unlock()
	body, err := json.Marshal(bareRequest{Model: "echo", Messages: messages})
	if err != nil {
		return "", err
	}
	answer, err := m.post(ctx, body)
	if err != nil {
		return "", err
	}
	m.chats.mu.Lock()
	ch.messages = append(messages, bareMessage{Role: "assistant", Content: answer})
	n := len("echo") + len(`{"tools":null}`) // counted as partsOf counts them: the model, no tools, each message's role and text
	for _, msg := range messages {
		n += len(msg.Role) + len(msg.Content)
	}
	ch.requests = append(ch.requests, n)
	m.chats.mu.Unlock()
	return answer, nil
}

// post sends one request body and returns the answer's text.
func (m bareModel) post(ctx context.Context, body []byte) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.url+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := m.http.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("model: HTTP %d: %s", resp.StatusCode, data)
	}
	var out struct {
		Choices []struct {
			Message bareMessage `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return "", fmt.Errorf("model: %w", err)
	}
	if len(out.Choices) == 0 {
		return "", errors.New("model: no choice in the answer")
	}
	return out.Choices[0].Message.Content, nil
}
