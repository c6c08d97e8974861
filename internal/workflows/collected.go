package workflows

import (
	"encoding/json"
	"fmt"
	"sort"
	"unicode/utf8"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
)

// What a task collects: the values it saves (the save capability, an
// output's exposes keys, a capability's result, the start argument's
// collected values), recalled to the model as already_collected, filling
// the instructions' placeholders, and shaped into the result at the end
// (output.go). What is stored has its secrets masked.

const (
	recallValues   = 12    // saved values shown to the model (already_collected)
	recallChars    = 120   // characters of each
	maxSavedBytes  = 2_000 // one saved value held inline; larger ones are refused (save) or summarised, or (rules.savedByRef) kept by reference
	maxSavedValues = 100   // the oldest are forgotten past this
)

// variables are what fills the instructions: collected values, then the
// caller's (which win a clash); secrets only by name.
func (r *collectedRecord) variables(args *StartArgs) (map[string]string, []string) {
	vars := map[string]string{}
	for _, c := range r.Collected {
		vars[c.Name] = plain(c.Value)
	}
	secret := map[string]bool{}
	for _, s := range args.Secrets {
		secret[s] = true
	}
	//workflowcheck:ignore each key is decided alone
	for n, v := range args.Variables {
		if secret[n] {
			delete(vars, n)
			continue
		}
		vars[n] = plain(v)
	}
	if len(vars) == 0 {
		vars = nil
	}
	return vars, args.Secrets
}

// plain renders a JSON value for text: strings bare, anything else as JSON.
func plain(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	return string(v)
}

// recall is what the model is shown as already_collected.
func (r *collectedRecord) recall(sec secrets) []activities.Recalled {
	cs := r.Collected
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
		out = append(out, activities.Recalled{Name: c.Name, Value: truncate(sec.mask(v), recallChars)})
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
func (r *collectedRecord) save(name string, value json.RawMessage, sec secrets) {
	value = sec.maskJSON(value)
	if len(value) > maxSavedBytes {
		value, _ = json.Marshal(truncate(plain(value), maxSavedBytes/2))
	}
	r.collect(name, value)
	r.bound()
}

// collect saves a value under name, replacing an earlier one.
func (r *collectedRecord) collect(name string, value json.RawMessage) {
	for i := range r.Collected {
		if r.Collected[i].Name == name {
			r.Collected = append(r.Collected[:i], r.Collected[i+1:]...)
			break
		}
	}
	r.Collected = append(r.Collected, contract.Collected{Name: name, Value: value})
}

// collectValue keeps a collected value the workflow holds whole (a
// capability's result): inline up to maxSavedBytes; larger, whole in the
// stash by reference (rules.collectedRefs), else in short form.
func (t *task) collectValue(ctx workflow.Context, name string, value json.RawMessage) {
	if !t.rules.collectedRefs || len(value) <= maxSavedBytes || len(value) > activities.MaxSavedValueBytes {
		t.durable.save(name, value, t.secrets())
		return
	}
	value = t.secrets().maskJSON(value)
	if res, ok := storeValue(ctx, name, activities.StoreValueInput{Transcript: t.durable.transcriptKey(), Value: value}, t.logger); ok {
		t.durable.saveRef(name, activities.Preview(value), res.Ref, t.secrets())
		return
	}
	t.durable.save(name, value, t.secrets()) // canceled while storing: the short form
}

// storeValue runs StoreValue, waiting out a storage outage. ok is false
// when the value was not stored (ctx canceled, or the earlier task's copy
// is gone): logged to logger, the entry keeps its short form.
func storeValue(ctx workflow.Context, name string, in activities.StoreValueInput, logger log.Logger) (activities.StoreValueResult, bool) {
	o := stashOptions
	o.Summary = "keep collected value " + name
	var res activities.StoreValueResult
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, o), activities.StoreValueName, in).Get(ctx, &res)
	if err != nil {
		logger.Warn("a collected value is kept in short form", "name", name, "error", err)
		return res, false
	}
	return res, res.Stored
}

// keepStartValues keeps the start argument's large collected values whole
// by reference (rules.collectedRefs), in place: the value itself, or for a
// rescue or resume the earlier task's copy, copied into this task's stash.
// Until then (and when a copy is gone) the entry holds its short form.
func (t *task) keepStartValues(ctx workflow.Context) {
	for _, name := range t.opening.takeLargeValues() {
		in := activities.StoreValueInput{Transcript: t.durable.transcriptKey()}
		if c := t.args.Continue; c != nil && c.CollectedRefs[name].Stash != "" {
			ref := c.CollectedRefs[name]
			in.From, in.Ref = &activities.TranscriptKey{TaskID: c.TaskID, FirstRunID: c.FirstRunID}, &ref
		} else {
			in.Value = t.secrets().maskJSON(t.args.Collected[name])
		}
		res, ok := storeValue(ctx, name, in, t.logger)
		if !ok {
			continue
		}
		preview := t.args.Collected[name] // the earlier task's preview
		if in.Value != nil {
			preview = activities.Preview(in.Value)
		}
		t.durable.keptByRef(name, preview, res.Ref, t.secrets())
	}
}

// keptByRef: the value saved under name is now kept whole in the stash
// (keepStartValues); its entry holds its preview, masked, and its
// reference.
func (r *collectedRecord) keptByRef(name string, preview json.RawMessage, ref activities.ValueRef, sec secrets) {
	for i := range r.Collected {
		if r.Collected[i].Name == name {
			ref := ref
			r.Collected[i].Value, r.Collected[i].Ref = sec.maskJSON(preview), &ref
		}
	}
}

// saveRef remembers a value kept whole in the stash (rules.savedByRef): the
// state holds its preview and its reference.
func (r *collectedRecord) saveRef(name string, preview json.RawMessage, ref activities.ValueRef, sec secrets) {
	r.collect(name, sec.maskJSON(preview))
	r.Collected[len(r.Collected)-1].Ref = &ref
	r.bound()
}

// bound forgets the oldest values past maxSavedValues.
func (r *collectedRecord) bound() {
	if len(r.Collected) > maxSavedValues {
		r.Collected = r.Collected[len(r.Collected)-maxSavedValues:]
	}
}

// collectOutput saves an output's exposes keys; refs are the values the
// model call stored by reference (savedByRef: rules.savedByRef).
func (r *collectedRecord) collectOutput(out contract.TaskIO, refs map[string]activities.ValueRef, savedByRef bool, sec secrets) {
	keys := make([]string, 0, len(out.Values))
	//workflowcheck:ignore sorted below
	for k := range out.Values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if ref, ok := refs[k]; ok && savedByRef && ref.Valid() {
			r.saveRef(k, activities.Preview(sec.maskJSON(out.Values[k])), ref, sec)
			continue
		}
		r.save(k, out.Values[k], sec)
	}
}

// builtin runs the save and finish capabilities.
func builtin(c *Carry, call activities.ToolCall, r rules, sec secrets) (string, bool) {
	switch call.Name {
	case activities.BuiltinSave:
		if r.savedByRef {
			return c.saveCall(call, r.boundedNames, sec), true
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
		c.save(a.Name, a.Value, sec)
		return "saved " + a.Name, true
	case activities.BuiltinFinish:
		c.finish()
		return "noted: give your final answer now; the result is prepared after it", true
	}
	return "", false
}

// saveCall runs a save (rules.savedByRef). The model call stored a value
// over maxSavedBytes and sent its preview and reference in its place, or
// only its size when it is over MaxSavedValueBytes. boundedNames:
// rules.boundedNames.
func (r *collectedRecord) saveCall(call activities.ToolCall, boundedNames bool, sec secrets) string {
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
	if boundedNames && !r.has(a.Name) && len(r.Collected) >= MaxCollectedNames {
		return fmt.Sprintf("error: this task already holds %d saved values, the most it keeps; save under a name you used before (it replaces that value), or gather values into one (a list)", len(r.Collected))
	}
	if a.Ref != nil && a.Ref.Valid() {
		r.saveRef(a.Name, a.Value, *a.Ref, sec)
		return fmt.Sprintf("saved %s (%d bytes, kept whole)", a.Name, a.Ref.Bytes)
	}
	r.save(a.Name, a.Value, sec) // at most maxSavedBytes (a larger one without a reference is kept in short form)
	return "saved " + a.Name
}

// MaxCollectedNames bounds the distinct names a task keeps values under
// (maxSavedValues). Before rules.boundedNames a save past it silently
// forgot the oldest value; since, the model is told and nothing is
// forgotten.
const MaxCollectedNames = maxSavedValues

// has says whether a value is kept under name.
func (r *collectedRecord) has(name string) bool {
	for _, c := range r.Collected {
		if c.Name == name {
			return true
		}
	}
	return false
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

// collectedRecord is the carried part of what the task saved.
type collectedRecord struct {
	// Collected is what the task saved, oldest first (by name: a later save
	// replaces).
	Collected []contract.Collected `json:"collected,omitempty"`
}

// byName are the saved values by name (an approval condition reads them).
func (r *collectedRecord) byName() map[string]json.RawMessage {
	collected := map[string]json.RawMessage{}
	for _, v := range r.Collected {
		collected[v.Name] = v.Value
	}
	return collected
}

// records are the saved values as the result and the shaping pass see
// them: secrets masked, at most maxRecordsChars (the oldest go first). A
// value by reference is its preview and its reference (the Shape activity
// reads it whole, then bounds the list again).
func (r *collectedRecord) records(sec secrets) ([]contract.Collected, string) {
	out := make([]contract.Collected, 0, len(r.Collected))
	for _, c := range r.Collected {
		out = append(out, contract.Collected{Name: c.Name, Value: sec.maskJSON(c.Value), Ref: c.Ref})
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

// startCollected saves the start argument's collected values, which the
// model is shown as already collected (bounded, secrets masked), and names
// the large ones to keep whole by reference before the first turn (with
// byRef, rules.collectedRefs).
func (r *collectedRecord) startCollected(args *StartArgs, byRef bool, sec secrets) (large []string) {
	names := make([]string, 0, len(args.Collected))
	//workflowcheck:ignore sorted below
	for n := range args.Collected {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		r.save(n, args.Collected[n], sec)
		v := args.Collected[n]
		fromEarlier := args.Continue != nil && args.Continue.CollectedRefs[n].Stash != ""
		if byRef && (fromEarlier || (len(v) > maxSavedBytes && len(v) <= activities.MaxSavedValueBytes)) {
			large = append(large, n)
		}
	}
	return large
}
