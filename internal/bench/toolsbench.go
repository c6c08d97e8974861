package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/agenttask/agenttask/internal/testmodel"
)

// The tool-using task of the streaming measurement: every task streams
// (rules 15), so what does streaming a turn that calls a tool cost in
// history? A stored task with one activity capability (a lookup on a
// queue of the bench's own) runs one tool round per run: the model asks
// for the lookup, reads its result and answers. Each run is read to its
// done through GET /v1/runs/{id}/events?events=all, and its history's
// events and bytes are counted as the text task's are, beside them.

const (
	toolsQueue    = "bench-tools"
	toolsActivity = "BenchLookup"
)

// toolRuns is what the tool-using task's runs measured.
type toolRuns struct {
	N             int
	Events, Bytes []int // history events and bytes of each run once it answered
	Streamed      []int // events of the full vocabulary each run streamed
	Types         map[string]int
}

// benchLookup is the tool: it finds an order.
func benchLookup(_ context.Context, args map[string]any) (map[string]any, error) {
	return map[string]any{"order": args["order"], "status": "shipped", "eta": "Monday"}, nil
}

// toolModel asks for the lookup when the request offers it and has no
// result yet, then answers with the result; any other call is Echo's.
func toolModel(c testmodel.Call) testmodel.Reply {
	if len(c.Tools) == 0 {
		return testmodel.Echo(c)
	}
	last := c.Messages[len(c.Messages)-1]
	if last.Role == "tool" {
		return testmodel.Reply{Text: "Your order: " + last.Content}
	}
	return testmodel.Reply{Text: "Let me look. ", ToolCalls: []testmodel.ToolCall{{ID: "call_1", Name: "lookup", Arguments: `{"order":"o-42"}`}}}
}

// measureToolRuns runs the tool-using task n times through the API at
// base (the one with a broker, which /events needs).
func measureToolRuns(ctx context.Context, c client.Client, model *testmodel.Server, base string, n int) (*toolRuns, error) {
	w := sdkworker.New(c, toolsQueue, sdkworker.Options{})
	w.RegisterActivityWithOptions(benchLookup, activity.RegisterOptions{Name: toolsActivity})
	if err := w.Start(); err != nil {
		return nil, err
	}
	defer w.Stop()
	model.SetHandler(toolModel)
	defer model.SetHandler(testmodel.Echo)
	task := map[string]any{"name": "bench-tools", "prompt": map[string]any{"name": "bench", "version": 1}, "model": "test/echo",
		"maxTokens": 200, "input": map[string]any{"maxBytes": 1000},
		"capabilities": []any{map[string]any{"name": "lookup", "kind": "activity", "activity": toolsActivity, "taskQueue": toolsQueue,
			"description": "Find an order", "parameters": map[string]any{"type": "object", "properties": map[string]any{"order": map[string]any{"type": "string"}}}}}}
	if err := post(base+"/v1/tasks", devKey, task, http.StatusCreated); err != nil {
		return nil, err
	}
	res := &toolRuns{N: n, Types: map[string]int{}}
	for i := range n {
		id, err := plainRunOf(ctx, base, "bench-tools", map[string]any{"input": fmt.Sprintf("Where is order o-42? (%d)", i)})
		if err != nil {
			return nil, err
		}
		types, err := allEvents(ctx, base, id)
		if err != nil {
			return nil, err
		}
		if types["tool_call.started"] != 1 || types["tool_call.finished"] != 1 {
			return nil, fmt.Errorf("run %s streamed %v: want one tool call and its result", id, types)
		}
		count := 0
		for t, k := range types {
			res.Types[t] += k
			count += k
		}
		res.Streamed = append(res.Streamed, count)
		events, size, err := settledHistory(ctx, c, id)
		if err != nil {
			return nil, err
		}
		res.Events, res.Bytes = append(res.Events, events), append(res.Bytes, size)
		_ = c.CancelWorkflow(ctx, id, "")
	}
	return res, nil
}

// plainRunOf runs task with body and returns the run's ID once answered.
func plainRunOf(ctx context.Context, base, task string, body any) (string, error) {
	data, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/tasks/"+task+"/run", bytes.NewReader(data))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+callKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var b strings.Builder
		_, _ = bufio.NewReader(resp.Body).WriteTo(&b)
		return "", fmt.Errorf("run of %s: %d %s", task, resp.StatusCode, b.String())
	}
	return resp.Header.Get("X-Request-Id"), nil
}

// allEvents reads a run's full event stream up to its done and counts
// its events by type.
func allEvents(ctx context.Context, base, id string) (map[string]int, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/runs/"+id+"/events?events=all", nil)
	req.Header.Set("Authorization", "Bearer "+callKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	types := map[string]int{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var e struct {
			Type string `json:"type"`
			Path string `json:"path"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			return nil, fmt.Errorf("run %s: event %q: %w", id, line, err)
		}
		types[e.Type]++
		if e.Type == "done" && e.Path == "" {
			return types, nil
		}
		if e.Type == "error" && e.Path == "" {
			return nil, fmt.Errorf("run %s: %s", id, line)
		}
	}
	return nil, fmt.Errorf("run %s: the events ended without done: %v", id, sc.Err())
}
