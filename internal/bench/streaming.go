package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"google.golang.org/protobuf/proto"

	"github.com/agenttask/agenttask/internal/broker"
	"github.com/agenttask/agenttask/internal/catalog"
	"github.com/agenttask/agenttask/internal/definitions"
	"github.com/agenttask/agenttask/internal/tasksapi"
	"github.com/agenttask/agenttask/internal/testmodel"
)

// Streaming: how long the first piece of an answer takes from
// the model to an HTTP client, through the model activity, the broker
// (NATS JetStream, embedded in agentdev) and the Tasks API; and whether a
// streamed run's history has more events than an unstreamed one.
//
// Each streamed run is a POST /v1/tasks/bench/run with "stream": true to an
// in-process API whose runs publish to the broker. The latency runs from
// the instant the test model writes its first delta (testmodel's
// FirstChunkAt) to the instant the client has read the first text event.
// The same run without streaming goes to a second API that has no broker,
// so its runs publish nothing. Each run's history events are counted once
// its answer is in and the run waits for more input.

const (
	maxFirstEvent = 300 * time.Millisecond
	devKey        = "bench-dev-key"
	callKey       = "bench-call-key"
)

type streamResult struct {
	N          int
	FirstEvent []time.Duration
	Streamed   []int // history events of each streamed run after its answer
	Plain      []int // the same, unstreamed
	// StreamedBytes and PlainBytes are those runs' history bytes (the sum
	// of proto.Size of their events).
	StreamedBytes, PlainBytes []int
	// Tools is the tool-using task's runs (toolsbench.go).
	Tools   *toolRuns
	Elapsed time.Duration
}

func measureStreaming(ctx context.Context, c client.Client, natsURL string, model *testmodel.Server, n int, progress func(string)) (*streamResult, error) {
	began := time.Now()
	b, err := broker.Connect(ctx, natsURL, "bench-api")
	if err != nil {
		return nil, fmt.Errorf("the broker: %w", err)
	}
	defer b.Close()
	const storeQueue = "bench-api"
	w := sdkworker.New(c, storeQueue, sdkworker.Options{})
	definitions.Register(w)
	if err := w.Start(); err != nil {
		return nil, err
	}
	defer w.Stop()
	keys, err := tasksapi.ParseKeys(callKey+"=call+view", devKey)
	if err != nil {
		return nil, err
	}
	cfg := tasksapi.Config{Store: &definitions.Store{C: c, Queue: storeQueue, Prefix: "bench/"}, Keys: keys, Catalog: catalog.Builtin(), TaskQueue: agentQueue}
	plainHandler, _ := tasksapi.New(cfg)
	cfg.Broker = b
	streamedHandler, _ := tasksapi.New(cfg)
	streamed, plain := httptest.NewServer(streamedHandler), httptest.NewServer(plainHandler)
	defer streamed.Close()
	defer plain.Close()

	if err := post(streamed.URL+"/v1/prompts/bench/versions", devKey, map[string]any{"text": "You answer briefly."}, http.StatusCreated); err != nil {
		return nil, err
	}
	task := map[string]any{"name": "bench", "prompt": map[string]any{"name": "bench", "version": 1}, "model": "test/echo",
		"maxTokens": 200, "input": map[string]any{"maxBytes": 1000}}
	if err := post(streamed.URL+"/v1/tasks", devKey, task, http.StatusCreated); err != nil {
		return nil, err
	}
	res := &streamResult{N: n}
	for i := range n {
		// The Echo model answers "echo: <input>", streamed word by word.
		body := map[string]any{"input": fmt.Sprintf("Streamed question %d: where is my order, and when does it leave the warehouse?", i), "stream": true}
		id, first, err := streamRun(ctx, streamed.URL, body)
		if err != nil {
			return nil, err
		}
		wrote := model.FirstChunkAt(model.CallCount())
		if wrote.IsZero() {
			return nil, fmt.Errorf("run %s: the model's call did not stream", id)
		}
		res.FirstEvent = append(res.FirstEvent, first.Sub(wrote))
		if n, size, err := settledHistory(ctx, c, id); err != nil {
			return nil, err
		} else {
			res.Streamed, res.StreamedBytes = append(res.Streamed, n), append(res.StreamedBytes, size)
		}
		delete(body, "stream")
		pid, err := plainRun(ctx, plain.URL, body)
		if err != nil {
			return nil, err
		}
		if n, size, err := settledHistory(ctx, c, pid); err != nil {
			return nil, err
		} else {
			res.Plain, res.PlainBytes = append(res.Plain, n), append(res.PlainBytes, size)
		}
		for _, run := range []string{id, pid} {
			_ = c.CancelWorkflow(ctx, run, "")
		}
		if (i+1)%10 == 0 {
			progress(fmt.Sprintf("streaming: %d/%d runs", i+1, n))
		}
	}
	if res.Tools, err = measureToolRuns(ctx, c, model, streamed.URL, min(n, 10)); err != nil {
		return nil, err
	}
	res.Elapsed = time.Since(began)
	return res, nil
}

func post(url, key string, body any, want int) error {
	data, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(data))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("POST %s: %d %s", url, resp.StatusCode, b)
	}
	return nil
}

// streamRun runs the task streamed; it returns the run's ID and when the
// first text event was read, after reading the stream to its done.
func streamRun(ctx context.Context, base string, body any) (string, time.Time, error) {
	data, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/tasks/bench/run", bytes.NewReader(data))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+callKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", time.Time{}, err
	}
	defer resp.Body.Close()
	id := resp.Header.Get("X-Request-Id")
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return id, time.Time{}, fmt.Errorf("streamed run: %d %s", resp.StatusCode, b)
	}
	var first time.Time
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var e struct{ Type, Code, Detail string }
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			return id, first, fmt.Errorf("run %s: event %q: %w", id, line, err)
		}
		switch e.Type {
		case "text":
			if first.IsZero() {
				first = time.Now()
			}
		case "done":
			if first.IsZero() {
				return id, first, fmt.Errorf("run %s: done before any text", id)
			}
			return id, first, nil
		default:
			return id, first, fmt.Errorf("run %s: %s: %s", id, e.Code, e.Detail)
		}
	}
	return id, first, fmt.Errorf("run %s: the stream ended without done: %v", id, sc.Err())
}

func plainRun(ctx context.Context, base string, body any) (string, error) {
	return plainRunOf(ctx, base, "bench", body)
}

// settledHistory counts a run's history events and their bytes (the sum
// of proto.Size) once it has stopped growing (the answer is in; the run
// waits for more input).
func settledHistory(ctx context.Context, c client.Client, id string) (int, int, error) {
	last := -1
	for range 50 {
		n, size := 0, 0
		it := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			e, err := it.Next()
			if err != nil {
				return 0, 0, err
			}
			n++
			size += proto.Size(e)
		}
		if n == last {
			return n, size, nil
		}
		last = n
		time.Sleep(200 * time.Millisecond)
	}
	return 0, 0, fmt.Errorf("run %s: its history kept growing", id)
}
