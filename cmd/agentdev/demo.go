package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/llm"
	"github.com/agenttask/agenttask/starter"
)

// runDemo starts a conversation, sends a follow-up by update, and prints the
// conversation as `messages` returns it.
func runDemo(ctx context.Context, tasks *starter.Client, models llm.RouterOptions, uiURL string) error {
	// The offline demo model runs only when no real endpoint is configured;
	// otherwise AGENT_DEMO_MODEL, or gpt-4o-mini where OpenAI is configured.
	model := os.Getenv("AGENT_DEMO_MODEL")
	if model == "" {
		switch _, openai := models.Endpoints["openai"]; {
		case models.EnableDemo:
			model = llm.DemoModel
		case openai:
			model = "openai/gpt-4o-mini"
		default:
			return fmt.Errorf("no demo model: set AGENT_DEMO_MODEL to a provider/model your endpoints serve")
		}
	}
	args := contract.StartArgs{
		Agent: contract.AgentSpec{
			Name:         "demo-assistant",
			Model:        model,
			Instructions: "You are a concise, friendly assistant. Answer in one or two sentences.",
			Parameters:   json.RawMessage(`{"type":"object","properties":{"customer":{"type":"string","description":"Who is writing"}}}`),
			Exposes:      json.RawMessage(`{"type":"object","properties":{"topic":{"type":"string","description":"The topic of the conversation, in two or three words"}},"required":["topic"]}`),
			MaxTokens:    300,
		},
		Input: &contract.TaskIO{
			Message: []contract.ContentPart{contract.TextPart("Hello! What can a durable agent task do?")},
			Values:  map[string]json.RawMessage{"customer": json.RawMessage(`"Amina"`)},
		},
	}
	fmt.Printf("\nDemo: starting a task with model %s", model)
	if model == llm.DemoModel {
		fmt.Print(" (the built-in offline demo model; set OPENAI_API_KEY for a real one)")
	}
	fmt.Println()
	id, err := tasks.Start(ctx, args, starter.StartOptions{TaskID: fmt.Sprintf("demo-%s", time.Now().UTC().Format("20060102-150405.000000"))})
	if err != nil {
		return err
	}
	if err := waitOutputs(ctx, tasks, id, 1); err != nil {
		return err
	}
	follow := contract.TaskIO{Message: []contract.ContentPart{contract.TextPart("And if the worker crashes halfway?")}}
	if _, err := tasks.Send(ctx, id, follow); err != nil {
		return err
	}
	if err := waitOutputs(ctx, tasks, id, 2); err != nil {
		return err
	}
	msgs, err := tasks.Messages(ctx, id, nil)
	if err != nil {
		return err
	}
	fmt.Printf("Demo task %s, the conversation as a person reads it (bin/starter messages %s gives the JSON):\n", id, id)
	for _, m := range msgs {
		fmt.Print(readable(m, args.Agent.Name))
	}
	if uiURL != "" {
		fmt.Printf("See it in the Web UI: %s/namespaces/default/workflows/%s\n", uiURL, id)
	}
	fmt.Printf("The task stays open for more inputs: bin/starter send %s 'one more question'\n", id)
	return nil
}

func waitOutputs(ctx context.Context, tasks *starter.Client, id string, n int) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		st, err := tasks.Status(ctx, id)
		if err != nil {
			return err
		}
		if st.Error != nil {
			return fmt.Errorf("the task failed: %s: %s", st.Error.Type, st.Error.Message)
		}
		if st.Outputs >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for output %d: %w", n, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// readable is one entry of the conversation as a person reads it: who said
// it, when it was received and committed (docs/contract.md#time-and-order),
// its values, and its text, indented.
func readable(m contract.Message, agent string) string {
	var b strings.Builder
	who := "you"
	if m.Type == contract.TypeOutput {
		who = agent
	}
	fmt.Fprintf(&b, "\n  %s", who)
	if len(m.Values) > 0 {
		vals, _ := json.Marshal(m.Values)
		fmt.Fprintf(&b, " %s", vals)
	}
	if m.ReceivedAt != "" {
		fmt.Fprintf(&b, " · received %s", clock(m.ReceivedAt))
	}
	if m.CommittedAt != "" {
		fmt.Fprintf(&b, " · committed %s", clock(m.CommittedAt))
	} else {
		b.WriteString(" · queued")
	}
	b.WriteString("\n")
	for _, line := range strings.Split(strings.TrimSpace(contract.TextOf(m.TaskIO)), "\n") {
		fmt.Fprintf(&b, "    %s\n", line)
	}
	return b.String()
}

// clock shows an instant as the local time of day, to the millisecond.
func clock(instant string) string {
	t, err := contract.ParseTime(instant)
	if err != nil {
		return instant
	}
	return t.Local().Format("15:04:05.000")
}
