package workflows

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
)

// Output (seed 003, translated): a task remembers what it saved and, when it
// is done, one pass of the output model turns that into the caller's JSON,
// checked against the caller's schema, retried at most twice with every
// violation by path.

const (
	recallValues    = 12     // saved values shown to the model (already_collected)
	recallChars     = 120    // characters of each
	maxRecordsChars = 60_000 // saved values the shaping pass gets
	shapeAttempts   = 3
	maxSavedBytes   = 2_000 // one saved value held inline; larger ones are refused (save) or summarised, or (rules.savedByRef) kept by reference
	maxSavedValues  = 100   // the oldest are forgotten past this
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
	for n := range args.Variables {
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
	for n := range args.Collected {
		if !placeholderName(n) {
			return contract.Invalid("collected: %q must be letters, digits, '_', '-' or '.'", n)
		}
	}
	return nil
}

func placeholderName(n string) bool {
	if n == "" || len(n) > 64 {
		return false
	}
	for _, r := range n {
		if !(r == '_' || r == '-' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

// startOutput recalls what earlier runs saved and learns the output model.
func (t *task) startOutput(ctx workflow.Context) error {
	if t.args.Output == nil {
		return nil
	}
	if m := t.args.Output.Model; m != "" {
		if t.rules.servedOutputModel {
			// A model no worker serves would fail the shaping pass at the
			// end, a day of retries later: refuse it now (seed 003).
			d, err := t.describeWorker(ctx)
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
	d, err := t.describeWorker(ctx)
	if err != nil {
		return err
	}
	if d.OutputModel == "" {
		return &contract.Error{Type: contract.ErrOutputUnavailable, Message: "the task asks for output, but it names no output.model and the worker has no default (AGENT_OUTPUT_MODEL)"}
	}
	t.durable.OutputModel = d.OutputModel
	return nil
}

// variables are what fills the instructions: collected values, then the
// caller's (which win a clash); secrets only by name.
func (t *task) variables() (map[string]string, []string) {
	vars := map[string]string{}
	for _, c := range t.durable.Collected {
		vars[c.Name] = plain(c.Value)
	}
	secret := map[string]bool{}
	for _, s := range t.args.Secrets {
		secret[s] = true
	}
	for n, v := range t.args.Variables {
		if secret[n] {
			delete(vars, n)
			continue
		}
		vars[n] = plain(v)
	}
	if len(vars) == 0 {
		vars = nil
	}
	return vars, t.args.Secrets
}

// plain renders a JSON value for text: strings bare, anything else as JSON.
func plain(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	return string(v)
}

// mask replaces every secret's value in s, as text and as it reads inside
// a JSON string (escaped). After continue-as-new the values are gone (they
// are never written again): the secrets' prints mask them then.
func (t *task) mask(s string) string {
	s = maskPrints(s, t.durable.SecretPrints)
	for _, name := range t.args.Secrets {
		v := plain(t.args.Variables[name])
		if v == "" || v == "[secret]" {
			continue
		}
		s = strings.ReplaceAll(s, v, "[secret]")
		if q, _ := json.Marshal(v); len(q) > 2 {
			s = strings.ReplaceAll(s, string(q[1:len(q)-1]), "[secret]")
		}
	}
	return s
}

// recall is what the model is shown as already_collected.
func (t *task) recall() []activities.Recalled {
	cs := t.durable.Collected
	if len(cs) > recallValues {
		cs = cs[len(cs)-recallValues:]
	}
	var out []activities.Recalled
	for _, c := range cs {
		v := plain(c.Value)
		var list []json.RawMessage
		if json.Unmarshal(c.Value, &list) == nil {
			v = fmt.Sprintf("%d items; first: ", len(list))
			if len(list) > 0 {
				v += plain(list[0])
			}
		}
		out = append(out, activities.Recalled{Name: c.Name, Value: truncate(t.mask(v), recallChars)})
	}
	return out
}

func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// save remembers a value, bounded in size and count, with secrets masked:
// what is stored is safe to show, to carry and to write.
func (t *task) save(name string, value json.RawMessage) {
	value = t.maskJSON(value)
	if len(value) > maxSavedBytes {
		value, _ = json.Marshal(truncate(plain(value), maxSavedBytes/2))
	}
	t.durable.collect(name, value)
	t.boundCollected()
}

// collectValue keeps a collected value the workflow holds whole (a
// capability's result): inline up to maxSavedBytes; larger, whole in the
// stash by reference (rules.collectedRefs), else in short form.
func (t *task) collectValue(ctx workflow.Context, name string, value json.RawMessage) {
	if !t.rules.collectedRefs || len(value) <= maxSavedBytes || len(value) > activities.MaxSavedValueBytes {
		t.save(name, value)
		return
	}
	value = t.maskJSON(value)
	if res, ok := t.storeValue(ctx, name, activities.StoreValueInput{Transcript: t.durable.Transcript, Value: value}); ok {
		t.saveRef(name, activities.Preview(value), res.Ref)
		return
	}
	t.save(name, value) // canceled while storing: the short form
}

// storeValue runs StoreValue, waiting out a storage outage. ok is false
// when the value was not stored (ctx canceled, or the earlier task's copy
// is gone).
func (t *task) storeValue(ctx workflow.Context, name string, in activities.StoreValueInput) (activities.StoreValueResult, bool) {
	o := stashOptions
	o.Summary = "keep collected value " + name
	var res activities.StoreValueResult
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, o), activities.StoreValueName, in).Get(ctx, &res)
	if err != nil {
		t.logger.Warn("a collected value is kept in short form", "name", name, "error", err)
		return res, false
	}
	return res, res.Stored
}

// keepStartValues keeps the start argument's large collected values whole
// by reference (rules.collectedRefs), in place: the value itself, or for a
// rescue or resume the earlier task's copy, copied into this task's stash.
// Until then (and when a copy is gone) the entry holds its short form.
func (t *task) keepStartValues(ctx workflow.Context) {
	for _, name := range t.opening.largeValues {
		in := activities.StoreValueInput{Transcript: t.durable.Transcript}
		if c := t.args.Continue; c != nil && c.CollectedRefs[name].Stash != "" {
			ref := c.CollectedRefs[name]
			in.From, in.Ref = &activities.TranscriptKey{TaskID: c.TaskID, FirstRunID: c.FirstRunID}, &ref
		} else {
			in.Value = t.maskJSON(t.args.Collected[name])
		}
		res, ok := t.storeValue(ctx, name, in)
		if !ok {
			continue
		}
		preview := t.args.Collected[name] // the earlier task's preview
		if in.Value != nil {
			preview = activities.Preview(in.Value)
		}
		for i := range t.durable.Collected {
			if t.durable.Collected[i].Name == name {
				ref := res.Ref
				t.durable.Collected[i].Value, t.durable.Collected[i].Ref = t.maskJSON(preview), &ref
			}
		}
	}
	t.opening.largeValues = nil
}

// saveRef remembers a value kept whole in the stash (rules.savedByRef): the
// state holds its preview and its reference.
func (t *task) saveRef(name string, preview json.RawMessage, ref activities.ValueRef) {
	t.durable.collect(name, t.maskJSON(preview))
	t.durable.Collected[len(t.durable.Collected)-1].Ref = &ref
	t.boundCollected()
}

func (t *task) boundCollected() {
	if len(t.durable.Collected) > maxSavedValues {
		t.durable.Collected = t.durable.Collected[len(t.durable.Collected)-maxSavedValues:]
	}
}

// largeValues asks a model call to keep saved values over maxSavedBytes
// whole in the stash and to return references in their place (a save
// call's arguments, an output's ValueRefs), masking secrets by their prints.
func (t *task) largeValues(in *activities.ModelTurnInput) {
	if !t.rules.savedByRef {
		return
	}
	lv := &activities.LargeValues{}
	for _, p := range t.durable.SecretPrints {
		lv.Prints = append(lv.Prints, p)
	}
	in.LargeValues = lv
}

// collectOutput saves an output's exposes keys; refs are the values the
// model call stored by reference (rules.savedByRef).
func (t *task) collectOutput(out contract.TaskIO, refs map[string]activities.ValueRef) {
	keys := make([]string, 0, len(out.Values))
	for k := range out.Values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if ref, ok := refs[k]; ok && t.rules.savedByRef && ref.Valid() {
			t.saveRef(k, activities.Preview(t.maskJSON(out.Values[k])), ref)
			continue
		}
		t.save(k, out.Values[k])
	}
}

// builtin runs the save and finish capabilities.
func (t *task) builtin(call activities.ToolCall) (string, bool) {
	switch call.Name {
	case activities.BuiltinSave:
		if t.rules.savedByRef {
			return t.saveCall(call), true
		}
		var a struct {
			Name  string          `json:"name"`
			Value json.RawMessage `json:"value"`
		}
		if err := json.Unmarshal([]byte(call.Arguments), &a); err != nil || !placeholderName(a.Name) || len(a.Value) == 0 {
			return `error: the arguments must be {"name": "a_name", "value": <any JSON>}`, true
		}
		if len(a.Value) > maxSavedBytes {
			return fmt.Sprintf("error: the value is %d bytes; save at most %d (summarise, or save parts under several names)", len(a.Value), maxSavedBytes), true
		}
		t.save(a.Name, a.Value)
		return "saved " + a.Name, true
	case activities.BuiltinFinish:
		t.durable.Finished = true
		return "noted: give your final answer now; the result is prepared after it", true
	}
	return "", false
}

// saveCall runs a save (rules.savedByRef). The model call stored a value
// over maxSavedBytes and sent its preview and reference in its place, or
// only its size when it is over MaxSavedValueBytes.
func (t *task) saveCall(call activities.ToolCall) string {
	var a struct {
		Name  string               `json:"name"`
		Value json.RawMessage      `json:"value"`
		Ref   *activities.ValueRef `json:"value_ref"`
		Bytes int                  `json:"value_bytes"`
	}
	if err := json.Unmarshal([]byte(call.Arguments), &a); err != nil || !placeholderName(a.Name) || len(a.Value) == 0 && a.Bytes <= 0 {
		return `error: the arguments must be {"name": "a_name", "value": <any JSON>}`
	}
	if n := max(a.Bytes, len(a.Value)); a.Bytes > 0 || n > activities.MaxSavedValueBytes {
		return fmt.Sprintf("error: the value is %d bytes; one value holds at most %d bytes (256 KiB): summarise it, or save parts under several names", n, activities.MaxSavedValueBytes)
	}
	if a.Ref != nil && a.Ref.Valid() {
		t.saveRef(a.Name, a.Value, *a.Ref)
		return fmt.Sprintf("saved %s (%d bytes, kept whole)", a.Name, a.Ref.Bytes)
	}
	t.save(a.Name, a.Value) // at most maxSavedBytes (a larger one without a reference is kept in short form)
	return "saved " + a.Name
}

// records are the saved values as the result and the shaping pass see
// them: secrets masked, at most maxRecordsChars (the oldest go first). A
// value by reference is its preview and its reference (the Shape activity
// reads it whole, then bounds the list again).
func (t *task) records() ([]Collected, string) {
	out := make([]Collected, 0, len(t.durable.Collected))
	for _, c := range t.durable.Collected {
		out = append(out, Collected{Name: c.Name, Value: t.maskJSON(c.Value), Ref: c.Ref})
	}
	shown := out
	for {
		b, _ := json.Marshal(shown)
		if len(b) <= maxRecordsChars || len(shown) == 0 {
			return out, string(b)
		}
		shown = shown[1:]
	}
}

// shape runs the shaping pass: at most three attempts, each its own
// activity (the Web UI shows "shaping attempt n"), each retry with every
// violation of the last by path.
func (t *task) shape(ctx workflow.Context) (json.RawMessage, []Collected, error) {
	o := t.args.Output
	compiled, _ := contract.CheckOutputSpec("output", *o)
	records, text := t.records()
	vars, secrets := t.variables()
	goal := t.mask(activities.FillInstructions(t.args.Agent.Instructions, vars, secrets))
	if t.durable.Base == 0 && len(t.durable.Held) > 0 {
		for _, p := range t.durable.Held[0].Msg.Message {
			if p.Text != nil {
				goal += "\n" + t.mask(*p.Text)
			}
		}
	}
	t.life.state = StateShaping
	t.showDetails(ctx)
	var violations []contract.Violation
	previous := ""
	for attempt := 1; attempt <= shapeAttempts; attempt++ {
		opts := t.waitingOptions(shapeOptions, 30*time.Second)
		opts.Summary = fmt.Sprintf("shape attempt %d · %d violations", attempt, len(violations))
		in := activities.ShapeInput{TaskID: t.life.taskID, Model: t.durable.OutputModel, Goal: goal, Instructions: o.Instructions,
			Schema: o.Schema, Records: text, Attempt: attempt, Previous: previous, Violations: violations,
			Retry: t.retry(fmt.Sprintf("shape:%d", attempt))}
		if byRef(records) {
			k := t.durable.Transcript
			in.Stash = &k
		}
		var res activities.ShapeResult
		done := t.waiting(in.Call)
		err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), activities.ShapeName, in).Get(ctx, &res)
		done()
		if err != nil {
			return nil, records, unwrapActivityError(err)
		}
		t.durable.Usage = t.durable.Usage.Add(Usage{InputTokens: res.Usage.InputTokens, OutputTokens: res.Usage.OutputTokens})
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
		if len(violations) == 0 {
			return res.Object, records, nil
		}
		workflow.GetLogger(ctx).Warn("shaped result refused", "attempt", attempt, "violations", contract.JoinViolations(violations))
	}
	details, _ := json.Marshal(map[string]any{"records": records, "violations": violations})
	return nil, records, temporal.NewNonRetryableApplicationError(
		fmt.Sprintf("no result fitted the schema after %d attempts: %s", shapeAttempts, contract.JoinViolations(violations)),
		contract.ErrOutputUnfit, nil, json.RawMessage(details))
}

// maskJSON masks secrets inside a JSON value's strings, whatever escaping
// the value was written with (activities.MaskJSON).
func (t *task) maskJSON(raw json.RawMessage) json.RawMessage {
	if len(t.args.Secrets) == 0 {
		return raw
	}
	return activities.MaskJSON(raw, t.mask)
}

// byRef reports whether a record is a value by reference.
func byRef(records []Collected) bool {
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
