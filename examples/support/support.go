// Package support is a team's own workflow that calls agents (docs/worker.md):
// TriageTicket asks an agent to shape a ticket into Triage{Priority, Team}
// (agents.Run with an output schema, decoded into the Go struct), the agent
// looking the customer up with the team's own activity LookupCustomer (an
// activity capability); then it opens a conversation (agents.Start) and
// asks it for the reply to send (agents.Ask).
//
// Run hosts all of it on one worker through the runtime's plugin:
// TriageTicket, LookupCustomer, AgentTask and the runtime's activities, on
// one task queue (worker.Options{Plugins: ...}). The capability names no
// taskQueue, so its calls run on the task's own queue (rules version 11;
// docs/contract.md, taskQueue); Workflows.ToolsQueue moves LookupCustomer
// to a queue of its own instead.
package support

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/agents"
	"github.com/agenttask/agenttask/contract"
)

// Names the workers and the agent's capability use.
const (
	TaskQueue          = "support" // TriageTicket, LookupCustomer and the runtime
	LookupCustomerName = "LookupCustomer"
	WorkflowName       = "TriageTicket"
)

// Ticket is what a customer wrote.
type Ticket struct {
	ID         string `json:"id"`
	CustomerID string `json:"customer_id"`
	Subject    string `json:"subject"`
	Body       string `json:"body"`
}

// Triage is the agent's shaped answer.
type Triage struct {
	Priority string `json:"priority"` // low | normal | high | urgent
	Team     string `json:"team"`     // billing | technical | sales
}

// Outcome is TriageTicket's result.
type Outcome struct {
	Triage       Triage         `json:"triage"`
	Reply        string         `json:"reply"`
	TriageTaskID string         `json:"triage_task_id"`
	ReplyTaskID  string         `json:"reply_task_id"`
	Usage        contract.Usage `json:"usage"`
}

// DefaultModel is the agents' model unless Workflows says otherwise.
const DefaultModel = "openai/gpt-4o-mini"

// Workflows holds the team's workflow and what it is configured with.
type Workflows struct {
	// Model is the agents' model ("provider/name"); DefaultModel when "".
	Model string
	// ToolsQueue, when set, is a queue of its own for LookupCustomer (a
	// second worker of the process); "": the task's own queue, one worker.
	ToolsQueue string
}

func (w *Workflows) toolsQueue() string { return w.ToolsQueue }

func (w *Workflows) model() string {
	if w.Model == "" {
		return DefaultModel
	}
	return w.Model
}

// TriageSchema is the shaped result's JSON Schema: Triage.
var TriageSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "priority": {"type": "string", "enum": ["low", "normal", "high", "urgent"]},
    "team": {"type": "string", "enum": ["billing", "technical", "sales"]}
  },
  "required": ["priority", "team"],
  "additionalProperties": false
}`)

// TriageAgent reads a ticket; it may look the customer up with
// LookupCustomer, run by a worker of toolsQueue ("": the task's own queue).
func TriageAgent(model, toolsQueue string) contract.AgentSpec {
	return contract.AgentSpec{
		Name: "triage", Model: model,
		Instructions: "You triage support tickets. Look the customer up first: their plan decides the priority (enterprise is at least high). Then say the priority and the team that should handle it.",
		Capabilities: []contract.Capability{{
			Name: "lookup_customer", Kind: contract.CapabilityActivity,
			Activity: LookupCustomerName, TaskQueue: toolsQueue,
			Description: "The customer's name and plan, by customer ID.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"customer_id":{"type":"string"}},"required":["customer_id"],"additionalProperties":false}`),
		}},
	}
}

// ReplyAgent writes to customers.
func ReplyAgent(model string) contract.AgentSpec {
	return contract.AgentSpec{Name: "reply", Model: model, Instructions: "You write short, kind replies to customers' support tickets."}
}

// TriageTicket triages a ticket with an agent, then has a second agent
// draft the reply in a conversation.
func (w *Workflows) TriageTicket(ctx workflow.Context, t Ticket) (*Outcome, error) {
	text := agents.Text(fmt.Sprintf("Ticket %s from customer %s.\nSubject: %s\n\n%s", t.ID, t.CustomerID, t.Subject, t.Body))
	res, err := agents.Run(ctx, contract.StartArgs{
		Agent: TriageAgent(w.model(), w.toolsQueue()),
		Input: &text,
		Output: &contract.OutputSpec{
			Instructions: "The ticket's priority and the team that handles it.",
			Schema:       TriageSchema,
		},
	})
	if err != nil {
		return nil, err
	}
	out := &Outcome{TriageTaskID: res.TaskID, Usage: res.Usage}
	if err := res.Decode(&out.Triage); err != nil {
		return nil, err
	}
	conv, err := agents.Start(ctx, contract.StartArgs{Agent: ReplyAgent(w.model()), Input: &text})
	if err != nil {
		return nil, err
	}
	out.ReplyTaskID = conv.TaskID
	ans, err := conv.Ask(ctx, agents.Text(fmt.Sprintf("Draft the reply: the ticket is %s priority and goes to the %s team.", out.Triage.Priority, out.Triage.Team)))
	if err != nil {
		return nil, err
	}
	out.Reply = ans.Text
	out.Usage = out.Usage.Add(ans.Turn.Usage)
	if err := conv.Close(ctx); err != nil {
		return nil, err
	}
	if _, err := conv.Result(ctx); err != nil {
		return nil, err
	}
	return out, nil
}

// CustomerRequest is LookupCustomer's argument: the model's arguments.
type CustomerRequest struct {
	CustomerID string `json:"customer_id"`
}

// Customer is what LookupCustomer returns to the model.
type Customer struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Plan string `json:"plan"` // free | pro | enterprise
}

// ErrCustomerNotFound is LookupCustomer's non-retryable failure.
const ErrCustomerNotFound = "CUSTOMER_NOT_FOUND"

// LookupCustomer finds a customer (pretend): IDs starting "ent-" are
// enterprise customers, "pro-" pro, others free; "missing" none.
func LookupCustomer(_ context.Context, req CustomerRequest) (*Customer, error) {
	id := strings.TrimSpace(req.CustomerID)
	if id == "" || strings.HasPrefix(id, "missing") {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("there is no customer %q", id), ErrCustomerNotFound, nil)
	}
	plan := "free"
	switch {
	case strings.HasPrefix(id, "ent-"):
		plan = "enterprise"
	case strings.HasPrefix(id, "pro-"):
		plan = "pro"
	}
	return &Customer{ID: id, Name: "Customer " + id, Plan: plan}, nil
}

// Register registers the team's workflow and activity under their names:
// on one worker (both registries the same), on two, or in a test
// environment.
func (w *Workflows) Register(wf worker.WorkflowRegistry, acts worker.ActivityRegistry) {
	wf.RegisterWorkflowWithOptions(w.TriageTicket, workflow.RegisterOptions{Name: WorkflowName})
	acts.RegisterActivityWithOptions(LookupCustomer, activity.RegisterOptions{Name: LookupCustomerName})
}
