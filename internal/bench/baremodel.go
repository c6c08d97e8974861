package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/agenttask/agenttask/internal/llm"
)

// bareModel is how the baselines ask a model: one chat-completions POST
// whose only message is the turn's text, to the same endpoint AgentTask
// calls, through the runtime's own HTTP client (llm.NewHTTPClient), so
// both sides reuse connections alike. It is the least a Temporal agent
// turn does to reach a model over HTTP. With it the model's own time (the
// endpoint's work and the loopback round trip, ~0.6 ms a turn) is on both
// sides of a ratio, and what differs is the runtime's: the window it
// renders, the request it encodes, the answer it decodes and records.
// Until 2026-12-03 the loops answered in process (bareAnswerInProcess,
// still measured beside it, docs/bench.md).
type bareModel struct {
	url  string // the endpoint's base URL; the request goes to url+"/chat/completions"
	http *http.Client
}

func newBareModel(url string) bareModel { return bareModel{url: url, http: llm.NewHTTPClient()} }

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

// ask returns the model's answer to text.
func (m bareModel) ask(ctx context.Context, text string) (string, error) {
	body, err := json.Marshal(bareRequest{Model: "echo", Messages: []bareMessage{{Role: "user", Content: text}}})
	if err != nil {
		return "", err
	}
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
