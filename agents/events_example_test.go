package agents_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agenttask/agenttask/agents"
	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/broker"
	"github.com/agenttask/agenttask/internal/broker/embedded"
)

// A service follows a task as it runs: the tool call the model asked
// for, its result, the answer. (Here a broker in the process stands in
// for AGENT_NATS_URL, and publish plays the worker's part.)
func ExampleEventSource_Events() {
	nats, err := embedded.Start(embedded.Options{})
	if err != nil {
		panic(err)
	}
	defer nats.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	publish(ctx, nats.URL(), "run-orders-42")

	src, err := agents.ConnectEvents(ctx, nats.URL())
	if err != nil {
		panic(err)
	}
	defer src.Close()
	for e, err := range src.Events(ctx, "run-orders-42", 0) {
		if err != nil {
			panic(err)
		}
		switch e.Type {
		case agents.EventToolCallStarted:
			fmt.Printf("calling %s %s\n", e.Tool.Name, e.Tool.Arguments)
		case agents.EventToolCallFinished:
			fmt.Printf("%s answered %s\n", e.Tool.Name, e.Tool.Result)
		case agents.EventApprovalRequested:
			var a contract.Approval
			if err := e.Decode(&a); err != nil {
				panic(err)
			}
			fmt.Printf("%s waits for a person (approval %s)\n", a.Capability, a.ID)
		case agents.EventText:
			fmt.Printf("text %q\n", e.Text)
		case agents.EventDone:
			fmt.Printf("turn %d done\n", e.Turn)
		}
		if e.Type == agents.EventDone {
			break
		}
	}
	// Output:
	// calling refund {"order_id":"o-42"}
	// refund waits for a person (approval t1.c1)
	// refund answered {"status":"issued"}
	// text "Refunded."
	// turn 1 done
}

// publish writes what a worker publishes of a turn that calls a tool.
func publish(ctx context.Context, url, taskID string) {
	b, err := broker.Connect(ctx, url, "example-worker")
	if err != nil {
		panic(err)
	}
	defer b.Close()
	w, err := b.OpenAt(ctx, taskID, broker.Position{Turn: 1, Step: 1, Attempt: 1})
	if err != nil {
		panic(err)
	}
	if err := w.ToolCalls(ctx, []broker.ToolCall{{ID: "c1", Name: "refund", Arguments: json.RawMessage(`{"order_id":"o-42"}`)}}); err != nil {
		panic(err)
	}
	w.Close()
	approval := contract.Approval{ID: "t1.c1", Capability: "refund", Arguments: json.RawMessage(`{"order_id":"o-42"}`), Turn: 1}
	if _, err := b.Append(ctx, taskID, broker.WithData(broker.Event{Turn: 1, Step: 1, Type: broker.TypeApprovalRequested}, approval)); err != nil {
		panic(err)
	}
	w, err = b.OpenAt(ctx, taskID, broker.Position{Turn: 1, Step: 2, Attempt: 1})
	if err != nil {
		panic(err)
	}
	defer w.Close()
	if err := w.Facts(ctx, []broker.Event{{Type: broker.TypeToolCallFinished, Tool: &broker.ToolCall{ID: "c1", Name: "refund", Result: `{"status":"issued"}`}}}); err != nil {
		panic(err)
	}
	w.Text("Refunded.")
	if err := w.Done(ctx, "end", contract.Usage{}, nil); err != nil {
		panic(err)
	}
}
