package workflows

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
)

// Output (docs/output.md): a task remembers what it saved
// (collected.go) and, when it is done, one pass of the output model turns
// that into the caller's JSON, checked against the caller's schema,
// retried at most twice with every violation by path.

const (
	maxRecordsChars = 60_000 // saved values the shaping pass gets
	shapeAttempts   = 3
)

var describeOptions = workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 5}}

var shapeOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 10 * time.Minute,
	HeartbeatTimeout:    10 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second,
		MaximumAttempts: 8, NonRetryableErrorTypes: []string{contract.ErrModel}},
}

// checkOutputArgs checks the output-related start keys.
func checkOutputArgs(args *StartArgs) error {
	if args.Output != nil {
		if _, err := contract.CheckOutputSpec("output", *args.Output); err != nil {
			return err
		}
	}
	names := map[string]bool{}
	//workflowcheck:ignore sorted: the first bad name is the same on every replay
	variables := slices.Sorted(maps.Keys(args.Variables))
	for _, n := range variables {
		if !placeholderName(n) {
			return contract.Invalid("variables: %q must be letters, digits, '_', '-' or '.'", n)
		}
		names[n] = true
	}
	for _, s := range args.Secrets {
		if !names[s] {
			return contract.Invalid("secrets: %q is not one of the variables", s)
		}
	}
	//workflowcheck:ignore sorted
	collected := slices.Sorted(maps.Keys(args.Collected))
	for _, n := range collected {
		if !placeholderName(n) {
			return contract.Invalid("collected: %q must be letters, digits, '_', '-' or '.'", n)
		}
	}
	return nil
}

// startOutput recalls what earlier runs saved and learns the output model.
func (t *task) startOutput(ctx workflow.Context) error {
	if t.args.Output == nil {
		return nil
	}
	if m := t.args.Output.Model; m != "" {
		if t.rules.servedOutputModel {
			// A model no worker serves would fail the shaping pass at the
			// end, a day of retries later: refuse it now (docs/output.md).
			d, err := describeWorker(ctx, &t.opening, t.rules.namedTimers)
			if err != nil {
				return err
			}
			if err := servedModel(d, m); err != nil {
				return err
			}
		}
		t.durable.OutputModel = m
		return nil
	}
	d, err := describeWorker(ctx, &t.opening, t.rules.namedTimers)
	if err != nil {
		return err
	}
	if d.OutputModel == "" {
		return &contract.Error{Type: contract.ErrOutputUnavailable, Message: "the task asks for output, but it names no output.model and the worker has no default (AGENT_OUTPUT_MODEL)"}
	}
	t.durable.OutputModel = d.OutputModel
	return nil
}

// shape runs the shaping pass: at most three attempts, each its own
// activity (the Web UI shows "shaping attempt n"), each retry with every
// violation of the last by path.
func (t *task) shape(ctx workflow.Context) (json.RawMessage, []contract.Collected, error) {
	o := t.args.Output
	compiled, _ := contract.CheckOutputSpec("output", *o)
	records, text := t.durable.records(t.secrets())
	vars, secretNames := t.durable.variables(&t.args)
	goal := t.secrets().mask(activities.FillInstructions(t.args.Agent.Instructions, vars, secretNames))
	if first, ok := t.durable.firstEntry(); ok {
		for _, p := range first.Message {
			if p.Text != nil {
				goal += "\n" + t.secrets().mask(*p.Text)
			}
		}
	}
	t.life.enter(contract.StateShaping)
	t.showDetails(ctx)
	var violations []contract.Violation
	previous := ""
	for attempt := 1; attempt <= shapeAttempts; attempt++ {
		opts := t.waitOut().options(shapeOptions, 30*time.Second)
		opts.Summary = fmt.Sprintf("shape attempt %d · %d violations", attempt, len(violations))
		in := activities.ShapeInput{TaskID: t.life.id(), Model: t.durable.OutputModel, Goal: goal, Instructions: o.Instructions,
			Schema: o.Schema, Records: text, Attempt: attempt, Previous: previous, Violations: violations,
			Retry: t.waitOut().retry(fmt.Sprintf("shape:%d", attempt))}
		if byRef(records) {
			k := t.durable.transcriptKey()
			in.Stash = &k
		}
		in.Budget = t.durable.budgetCheck() // budget.go: nil without a budget
		var res activities.ShapeResult
		done := t.outages.waiting(in.Call)
		err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), activities.ShapeName, in).Get(ctx, &res)
		done()
		if err != nil {
			chargeFailed(t.durable, t.rules.chargeFailures, err) // budget.go
			return nil, records, unwrapActivityError(err)
		}
		t.durable.addUsage(res.Usage.Usage)
		t.durable.chargeBudget(res.Usage)
		if res.BudgetShort != nil {
			// The attempt's request did not fit the budget: the same
			// attempt runs again once a raise makes room.
			if err := t.awaitBudget(ctx, ctx, *res.BudgetShort, false); err != nil {
				return nil, records, err
			}
			attempt--
			continue
		}
		previous = res.Raw
		switch {
		case len(res.Object) == 0 || string(res.Object) == "null":
			violations = []contract.Violation{{Path: "/", Message: "the answer is not JSON"}}
		case compiled != nil:
			violations = compiled.ValidateObject(res.Object)
		default:
			violations = nil
			var obj map[string]json.RawMessage
			if json.Unmarshal(res.Object, &obj) != nil || obj == nil {
				violations = []contract.Violation{{Path: "/", Message: "not one JSON object"}}
			}
		}
		t.announceShaping(ctx, attempt, violations) // events.go
		if len(violations) == 0 {
			return res.Object, records, nil
		}
		workflow.GetLogger(ctx).Warn("shaped result refused", "attempt", attempt, "violations", contract.JoinViolations(violations))
	}
	d := map[string]any{"records": records, "violations": violations}
	if t.durable.hasBudget() { // a parent counts what this task used (budget.go)
		d["usage"], d["budget"] = t.durable.used(), t.durable.budgetStatus(t.budget)
	}
	details, _ := json.Marshal(d)
	return nil, records, temporal.NewNonRetryableApplicationError(
		fmt.Sprintf("no result fitted the schema after %d attempts: %s", shapeAttempts, contract.JoinViolations(violations)),
		contract.ErrOutputUnfit, nil, json.RawMessage(details))
}

// byRef reports whether a record is a value by reference.
func byRef(records []contract.Collected) bool {
	for _, r := range records {
		if r.Ref != nil {
			return true
		}
	}
	return false
}

// servedModel refuses a model whose provider the worker does not serve
// (when the worker says which it serves).
func servedModel(d *activities.WorkerDescription, model string) error {
	if d.Providers == nil {
		return nil
	}
	provider, _, _ := strings.Cut(model, "/")
	for _, p := range d.Providers {
		if p == provider {
			return nil
		}
	}
	return &contract.Error{Type: contract.ErrOutputUnavailable, Message: fmt.Sprintf(
		"output.model %q: the worker of this task queue that was asked does not serve the provider %q (it serves %s); name a model of one of those, or leave output.model out for the worker's default", model, provider, strings.Join(d.Providers, ", "))}
}

// outputRecord is the carried part of the shaping pass.
type outputRecord struct {
	// OutputModel is the model of the shaping pass, learned at the start.
	OutputModel string `json:"output_model,omitempty"`
}

// outputModel is the shaping pass's model ("" until it is learned).
func (r *outputRecord) outputModel() string { return r.OutputModel }
