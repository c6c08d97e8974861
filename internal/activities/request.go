package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/llm"
)

// buildRequest turns the agent and the window into a chat request, with
// file parts resolved against the task's mount for this request only. It
// returns the index in the request's messages of each window entry.
func (acts *Activities) buildRequest(ctx context.Context, a *contract.Agent, taskID string, from int, window []contract.Message, scratch []ScratchMessage, ownFrom int, recall []Recalled) (llm.Request, []int, error) {
	req := llm.Request{Model: a.Spec.Model, MaxTokens: a.Spec.MaxTokens, Temperature: a.Spec.Temperature,
		TopP: a.Spec.TopP, ReasoningEffort: a.Spec.ReasoningEffort}
	system := a.Spec.Instructions
	if a.Spec.JSON {
		req.JSONObject = true
		if a.Answer != nil {
			_ = json.Unmarshal(a.Spec.Schema, &req.JSONSchema)
			req.SchemaName = "answer"
			system = strings.TrimSpace(system + "\n\nAnswer with one JSON object that fits this schema:\n" + string(a.Spec.Schema))
		} else {
			system = strings.TrimSpace(system + "\n\nAnswer with one JSON object.")
		}
	}
	if structured(a) {
		req.JSONSchema = outputSchema(a)
		req.SchemaName = "output"
		b, _ := json.Marshal(req.JSONSchema)
		system = strings.TrimSpace(system + "\n\nAnswer with one JSON object that fits this schema; \"message\" holds your reply to the user:\n" + string(b))
		if a.Spec.Mount != nil {
			system += "\nTo hand back files of your mount with your answer, list their references (" + a.Spec.Mount.Root + "://name) in \"attachments\"."
		}
	}
	if system != "" {
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleSystem, Content: system})
	}
	entries := make([]int, 0, len(window))
	nextScratch := 0
	called := map[string]string{} // the turn's calls so far: function by call ID
	addScratch := func(before int) error {
		var files []llm.Part // returned by the calls of one response: shown after all their tool messages
		flush := func() {
			if len(files) > 0 {
				req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Parts: files})
				files = nil
			}
		}
		for ; nextScratch < len(scratch) && scratch[nextScratch].At <= before; nextScratch++ {
			s := scratch[nextScratch]
			if len(s.ToolCalls) > 0 {
				flush() // the previous response's files, before the next calls
				for _, c := range s.ToolCalls {
					called[c.ID] = c.Name
				}
			}
			m, parts, err := acts.scratchMessages(ctx, a.Spec, taskID, s, isMCPFunction(a.Spec, called[s.ToolCallID]))
			if err != nil {
				return err
			}
			req.Messages = append(req.Messages, m)
			files = append(files, parts...)
		}
		flush()
		return nil
	}
	for i, m := range window {
		if err := addScratch(from + i); err != nil {
			return req, nil, err
		}
		role := llm.RoleUser
		if m.Type == contract.TypeOutput {
			role = llm.RoleAssistant
		}
		msg := llm.Message{Role: role, Content: renderEntry(a, m)}
		if role == llm.RoleUser && m.TaskIO.HasFiles() && from+i >= ownFrom {
			parts, err := acts.resolveFiles(ctx, a.Spec, taskID, m.TaskIO)
			if err != nil {
				return req, nil, err
			}
			msg.Parts = append([]llm.Part{{Type: "text", Text: msg.Content}}, parts...)
		}
		entries = append(entries, len(req.Messages))
		req.Messages = append(req.Messages, msg)
	}
	if err := addScratch(int(^uint(0) >> 1)); err != nil {
		return req, nil, err
	}
	if len(recall) > 0 {
		req.Messages = append(req.Messages, recallMessage(recall))
	}
	return req, entries, nil
}

// withRecall places the already_collected block, which changes whenever a
// value is saved, late in the request: right before the inputs this call
// commits (window entry at, and what follows them), so the conversation up
// to the previous turn repeats the previous request byte for byte and a
// provider's prompt cache serves it (cache-stable requests,
// window_block.go), while the model still reads the new inputs last. The
// instructions and tools come first. In a capability round it goes after
// the conversation, before the turn's exchange (which the next turn does
// not repeat), so the model reads the results last. at is the index in
// msgs; -1: last.
func withRecall(msgs []llm.Message, entries []int, recall []Recalled, at int) ([]llm.Message, []int) {
	if len(recall) == 0 {
		return msgs, entries
	}
	idx := len(msgs)
	if at >= 0 && at <= len(msgs) {
		idx = at
	}
	out := make([]llm.Message, 0, len(msgs)+1)
	out = append(append(append(out, msgs[:idx]...), recallMessage(recall)), msgs[idx:]...)
	shifted := make([]int, len(entries))
	for i, e := range entries {
		shifted[i] = e
		if e >= idx {
			shifted[i]++
		}
	}
	return out, shifted
}

// renderEntry is how an entry reads to the model: its text, plus its
// dynamic values as JSON.
func renderEntry(a *contract.Agent, m contract.Message) string {
	var texts []string
	for _, p := range m.Message {
		if p.Text != nil {
			texts = append(texts, *p.Text)
		}
	}
	for _, p := range m.Message {
		if p.File != nil {
			texts = append(texts, fmt.Sprintf("[attached: %s (%s, %d bytes)]", *p.File, p.MimeType, size(p)))
		}
	}
	text := strings.Join(texts, "\n\n")
	if m.Type == contract.TypeOutput && a.Exposes != nil {
		obj := map[string]json.RawMessage{}
		for k, v := range m.Values {
			obj[k] = v
		}
		tb, _ := json.Marshal(text)
		obj[contract.KeyMessage] = tb
		b, _ := json.Marshal(obj)
		return string(b)
	}
	if len(m.Values) > 0 {
		b, _ := json.Marshal(m.Values)
		text += "\n\nParameters: " + string(b)
	}
	return text
}
