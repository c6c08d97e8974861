package taskdef

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agenttask/agenttask/contract"
)

// Limits of a task definition (docs/tasks-api.md#tasks; 1 KB = 1,000 bytes,
// as for content: docs/content.md#limits).
const (
	MaxNameLength       = 63
	MaxDescriptionChars = 500
	MaxSchemaBytes      = 16_000
	MaxInputBytes       = 32_768
	MaxVariableBytes    = 32_768
	MaxHistoryMessages  = 50
	MaxHistoryBytes     = 65_536
	MaxTemperature      = 2.0
	MaxTopP             = 1.0
)

// Reasoning efforts; "" leaves the model's default.
const (
	EffortLow    = "low"
	EffortMedium = "medium"
	EffortHigh   = "high"
)

// Definition is a task as created or changed (docs/tasks-api.md#tasks).
type Definition struct {
	Name            string              `json:"name"`
	Description     string              `json:"description,omitempty"`
	Prompt          PromptRef           `json:"prompt"`
	Model           string              `json:"model"`
	MaxTokens       int                 `json:"maxTokens"`
	Temperature     *float64            `json:"temperature"` // nil: the model's default
	TopP            *float64            `json:"topP"`        // nil: the model's default
	ReasoningEffort string              `json:"reasoningEffort"`
	JSON            bool                `json:"json"`
	Schema          json.RawMessage     `json:"schema"` // nil or a JSON object
	Input           InputLimits         `json:"input"`
	Variables       map[string]Variable `json:"variables"`
	History         *HistoryLimits      `json:"history,omitempty"`
	Enabled         *bool               `json:"enabled,omitempty"` // nil: true
	// Budget (docs/budgets.md#the-tasks-api) bounds what each
	// run of the task spends on model calls: StartArgs budget of every run,
	// unless the run request gives its own. nil: runs are unbounded.
	Budget *contract.Budget `json:"budget,omitempty"`
	// Capabilities (docs/tasks-api.md#capabilities, an extension of seed
	// 004) are the tools each run's model may call: capabilities of kind
	// mcp (a server the operator lists) or activity, as an agent's
	// (docs/contract.md), approvals included.
	Capabilities []contract.Capability `json:"capabilities,omitempty"`
}

// MaxCapabilities bounds a task's capabilities.
const MaxCapabilities = 16

// PromptRef names a stored prompt version.
type PromptRef struct {
	Name    string `json:"name"`
	Version int    `json:"version"`
}

// InputLimits bounds a run's input; MaxBytes is required, 0 means no input.
type InputLimits struct {
	MaxBytes *int `json:"maxBytes"`
}

// Variable fixes a prompt variable (Value) or lets a run send it (MaxBytes):
// exactly one of the two is set.
type Variable struct {
	Value    *string `json:"value,omitempty"`
	MaxBytes *int    `json:"maxBytes,omitempty"`
}

// HistoryLimits bounds the earlier messages a run may send. Messages 0 (or
// no history object) means the task takes no history.
type HistoryLimits struct {
	Messages int `json:"messages"`
	MaxBytes int `json:"maxBytes"`
}

// ModelInfo is what validation needs of a catalogue model.
type ModelInfo interface {
	MaxTokens() int
	Reasoning() bool
}

// Models is the model catalogue as validation sees it.
type Models interface {
	Lookup(name string) (ModelInfo, bool)
}

var namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// CheckName checks a task or prompt name: 1 to 63 lowercase letters, digits
// and hyphens, starting with a letter or digit.
func CheckName(field, name string) *FieldError {
	if name == "" {
		return refuse(field, "required")
	}
	if !namePattern.MatchString(name) {
		return refuse(field, "must be 1 to %d lowercase letters, digits and hyphens, starting with a letter or digit", MaxNameLength)
	}
	return nil
}

// Validate checks d against every rule of the seed and reports the first
// fault. promptVariables are the variables of the prompt version d names
// (whether that version exists is the caller's check). On success d is made
// canonical, so a stored task always shows every field: Enabled defaults to
// true, a missing History becomes {0, 0}, a missing Variables becomes {},
// and the schema is stored compact (its size is measured compact).
func Validate(d *Definition, promptVariables []string, models Models) *FieldError {
	if fe := CheckName("name", d.Name); fe != nil {
		return fe
	}
	if n := utf8.RuneCountInString(d.Description); n > MaxDescriptionChars {
		return refuse("description", "at most %d characters, got %d", MaxDescriptionChars, n)
	}
	if d.Prompt == (PromptRef{}) {
		return refuse("prompt", "required: { \"name\", \"version\" }")
	}
	if fe := CheckName("prompt.name", d.Prompt.Name); fe != nil {
		return fe
	}
	if d.Prompt.Version < 1 {
		return refuse("prompt.version", "must be 1 or more")
	}
	if fe := checkModel(d, models); fe != nil {
		return fe
	}
	compact, fe := checkSchema(d)
	if fe != nil {
		return fe
	}
	if d.Input.MaxBytes == nil {
		return refuse("input.maxBytes", "required: 0 (no input) to %d", MaxInputBytes)
	}
	if n := *d.Input.MaxBytes; n < 0 || n > MaxInputBytes {
		return refuse("input.maxBytes", "must be from 0 to %d, got %d", MaxInputBytes, n)
	}
	if fe := checkVariables(d.Variables, promptVariables); fe != nil {
		return fe
	}
	if fe := CheckBudget(d.Budget); fe != nil {
		return fe
	}
	if fe := checkCapabilityKinds(d.Capabilities); fe != nil {
		return fe
	}
	if h := d.History; h != nil {
		switch {
		case h.Messages < 0 || h.Messages > MaxHistoryMessages:
			return refuse("history.messages", "must be from 0 to %d, got %d", MaxHistoryMessages, h.Messages)
		case h.Messages > 0 && *d.Input.MaxBytes == 0:
			// History is the conversation before the input: without input there is no turn to precede.
			return refuse("history.messages", "needs input: set input.maxBytes above 0")
		case h.MaxBytes < 0 || h.MaxBytes > MaxHistoryBytes:
			return refuse("history.maxBytes", "must be from 0 to %d, got %d", MaxHistoryBytes, h.MaxBytes)
		case h.MaxBytes > 0 && h.Messages == 0:
			return refuse("history.maxBytes", "needs history.messages above 0")
		}
	}

	d.Schema = compact
	if d.History == nil {
		d.History = &HistoryLimits{}
	}
	if d.Variables == nil {
		d.Variables = map[string]Variable{}
	}
	if d.Enabled == nil {
		enabled := true
		d.Enabled = &enabled
	}
	return nil
}

func checkModel(d *Definition, models Models) *FieldError {
	if d.Model == "" {
		return refuse("model", "required: a model from the catalogue")
	}
	var info ModelInfo
	ok := false
	if models != nil {
		info, ok = models.Lookup(d.Model)
	}
	if !ok {
		return refuse("model", "%q is not in the catalogue", d.Model)
	}
	if limit := info.MaxTokens(); d.MaxTokens < 1 || d.MaxTokens > limit {
		return refuse("maxTokens", "must be from 1 to %d (the model's maximum), got %d", limit, d.MaxTokens)
	}
	if t := d.Temperature; t != nil && !(*t >= 0 && *t <= MaxTemperature) {
		return refuse("temperature", "must be from 0 to 2, or null for the model's default")
	}
	if p := d.TopP; p != nil && !(*p >= 0 && *p <= MaxTopP) {
		return refuse("topP", "must be from 0 to 1, or null for the model's default")
	}
	switch d.ReasoningEffort {
	case "":
	case EffortLow, EffortMedium, EffortHigh:
		if !info.Reasoning() {
			return refuse("reasoningEffort", "%q does not reason: leave reasoningEffort empty", d.Model)
		}
	default:
		return refuse("reasoningEffort", "must be low, medium, high, or empty for the default")
	}
	return nil
}

// checkSchema returns the schema compacted (nil for none).
func checkSchema(d *Definition) (json.RawMessage, *FieldError) {
	raw := bytes.TrimSpace(d.Schema)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] != '{' {
		return nil, refuse("schema", "must be a JSON object, or null for none")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, refuse("schema", "not valid JSON: %v", err)
	}
	if buf.Len() > MaxSchemaBytes {
		return nil, refuse("schema", "at most %d bytes serialised, got %d", MaxSchemaBytes, buf.Len())
	}
	if !d.JSON {
		return nil, refuse("schema", "needs json: true")
	}
	if err := contract.CheckSubset("schema", buf.Bytes()); err != nil {
		// CheckSubset's messages start with the offending path: make it the field.
		msg := contract.MessageOf(err)
		if path, detail, ok := strings.Cut(msg, ": "); ok && (path == "schema" || strings.HasPrefix(path, "schema.")) {
			return nil, refuse(path, "%s", detail)
		}
		return nil, refuse("schema", "%s", msg)
	}
	return json.RawMessage(buf.Bytes()), nil
}

// checkVariables checks the entries in the prompt's order, then refuses
// extras in name order, so the fault reported is always the same.
func checkVariables(vars map[string]Variable, promptVariables []string) *FieldError {
	declared := map[string]bool{}
	for _, name := range promptVariables {
		declared[name] = true
		field := "variables." + name
		v, ok := vars[name]
		if !ok {
			return refuse(field, "missing: the prompt has {{%s}}; give { \"value\": \"…\" } to fix it or { \"maxBytes\": n } to let a run send it", name)
		}
		switch {
		case (v.Value == nil) == (v.MaxBytes == nil):
			return refuse(field, "give exactly one of value or maxBytes")
		case v.Value != nil && len(*v.Value) > MaxVariableBytes:
			return refuse(field+".value", "at most %d bytes, got %d", MaxVariableBytes, len(*v.Value))
		case v.MaxBytes != nil && (*v.MaxBytes < 1 || *v.MaxBytes > MaxVariableBytes):
			return refuse(field+".maxBytes", "must be from 1 to %d, got %d", MaxVariableBytes, *v.MaxBytes)
		}
	}
	for _, name := range sortedKeys(vars) {
		if !declared[name] {
			return refuse("variables."+name, "the prompt has no variable {{%s}}", name)
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// fixedValues are the values the task fixes.
func fixedValues(d Definition) map[string]string {
	out := map[string]string{}
	for name, v := range d.Variables {
		if v.Value != nil {
			out[name] = *v.Value
		}
	}
	return out
}

// InputTokensWorstCase bounds the input tokens of one run by counting every
// byte it may send as a token: the prompt with fixed values in place and
// open placeholders removed, the input, each open placeholder at its
// maxBytes (once per occurrence, as FillPrompt fills every occurrence), and
// the history.
func InputTokensWorstCase(d Definition, promptText string) int64 {
	n := InstructionsWorstCase(d, promptText)
	if d.Input.MaxBytes != nil {
		n += int64(*d.Input.MaxBytes)
	}
	if d.History != nil {
		n += int64(d.History.MaxBytes)
	}
	return n
}

// InstructionsWorstCase is the longest the filled prompt can be: fixed
// values in place, each open placeholder at its variable's maxBytes.
func InstructionsWorstCase(d Definition, promptText string) int64 {
	n := int64(len(FillPrompt(promptText, fixedValues(d))))
	for _, m := range placeholder.FindAllStringSubmatch(promptText, -1) {
		if v, ok := d.Variables[m[1]]; ok && v.Value == nil && v.MaxBytes != nil {
			n += int64(*v.MaxBytes)
		}
	}
	return n
}

// checkCapabilityKinds refuses more than MaxCapabilities capabilities and
// any kind but mcp, activity and a2a (a remote agent's spend is its own): a delegate's sub-task has a spend of its
// own that worstCase could not bound. The rest of a capability's rules are
// an agent's (the API checks them as the runtime does).
func checkCapabilityKinds(caps []contract.Capability) *FieldError {
	if len(caps) > MaxCapabilities {
		return refuse("capabilities", "at most %d, got %d", MaxCapabilities, len(caps))
	}
	for i, c := range caps {
		switch c.Kind {
		case contract.CapabilityMCP, contract.CapabilityActivity, contract.CapabilityA2A:
		case contract.CapabilityDelegate:
			return refuse(fmt.Sprintf("capabilities[%d].kind", i), "a stored task's capabilities are of kind mcp, activity or a2a; delegate is not offered (a sub-task's spend would have no bound in worstCase)")
		default:
			return refuse(fmt.Sprintf("capabilities[%d].kind", i), "must be mcp, activity or a2a, got %q", c.Kind)
		}
	}
	return nil
}

// CheckBudget checks a task's or a run's budget (nil: none) as
// contract.CheckBudget does, naming the refused field (budget.units).
func CheckBudget(b *contract.Budget) *FieldError {
	if b == nil {
		return nil
	}
	if err := contract.CheckBudget("budget", *b); err != nil {
		msg := contract.MessageOf(err)
		if path, detail, ok := strings.Cut(msg, ": "); ok && (path == "budget" || strings.HasPrefix(path, "budget.")) {
			return refuse(path, "%s", detail)
		}
		return refuse("budget", "%s", msg)
	}
	return nil
}
