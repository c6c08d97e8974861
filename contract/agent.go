package contract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// AgentSpec describes the agent a task runs. Keys are camelCase like the
// stored tasks of seed 004. Later issues add keys; unknown keys are refused
// so a typo never silently drops a setting.
type AgentSpec struct {
	Name         string          `json:"name"`
	Model        string          `json:"model"` // "provider/model"
	Instructions string          `json:"instructions,omitempty"`
	Parameters   json.RawMessage `json:"parameters,omitempty"` // subset schema of input dynamic keys
	Exposes      json.RawMessage `json:"exposes,omitempty"`    // subset schema of output dynamic keys
	MaxTokens    int             `json:"maxTokens,omitempty"`  // 0: the model's default
	Temperature  *float64        `json:"temperature,omitempty"`
	// TopP (0 to 1) is sent as top_p; nil leaves the model's default.
	TopP *float64 `json:"topP,omitempty"`
	// ReasoningEffort (low, medium, high) is sent as reasoning_effort to a
	// model that reasons; "" leaves the default.
	ReasoningEffort string `json:"reasoningEffort,omitempty"`
	// JSON asks for answers that are one JSON object (in the output's text
	// part); Schema, when set, is what that object must fit (seed 003's
	// subset). Violations go back to the model, as for exposes.
	JSON   bool            `json:"json,omitempty"`
	Schema json.RawMessage `json:"schema,omitempty"`
	// ContextTokens is the model's context size; the request is windowed to
	// fit it. 0 means DefaultContextTokens.
	ContextTokens int `json:"contextTokens,omitempty"`

	// Mount is where the agent's files live (seed 001): references
	// "<root>://<path>" name objects in the task's own space of that storage.
	Mount *MountSpec `json:"mount,omitempty"`
	// Guardrails refuse inputs: each expression (CEL) must hold for every input.
	Guardrails []Guardrail `json:"guardrails,omitempty"`
	// Capabilities the model may call, each offered only when its condition holds.
	Capabilities []Capability `json:"capabilities,omitempty"`
}

// MaxAnswerSchemaBytes bounds a JSON agent's schema (seed 004: 16 KB).
const MaxAnswerSchemaBytes = 16_000

// MountSpec names an agent's file storage and the root, the URI scheme of
// its references. The storage is one the operator configured (AGENT_MOUNTS),
// by its name; a URL is accepted only when it equals a configured one.
type MountSpec struct {
	Root string `json:"root"`
	Name string `json:"name,omitempty"`
	URL  string `json:"url,omitempty"`
}

// Guardrail refuses an input whose expression is false or fails to evaluate.
type Guardrail struct {
	Name       string `json:"name"`
	Expression string `json:"expression"`
	Message    string `json:"message"`
}

// Capability kinds.
const (
	// CapabilityDelegate starts Agent as a sub-task with the model's input
	// (files copied into its mount) and returns its answer (files copied back).
	CapabilityDelegate = "delegate"
	// CapabilityActivity runs the activity type Activity on TaskQueue with the
	// model's arguments (checked against Parameters) as its one JSON argument;
	// its JSON result is the tool result.
	CapabilityActivity = "activity"
)

// Approval policies of a capability (Capability.Approval).
const (
	ApprovalNever  = "never"  // the default: only ApprovalCondition can ask
	ApprovalAlways = "always" // every call waits for a person's decision
)

// Defaults and bounds of an activity capability.
const (
	DefaultCapabilityTimeout   = 30 * time.Second
	DefaultCapabilityStart     = time.Minute      // startTimeout: a worker must pick the call up by then
	DefaultCapabilityCall      = 10 * time.Minute // timeout: the whole call, retries included
	MinCapabilityTimeout       = time.Second
	MaxCapabilityTimeout       = 24 * time.Hour
	MinApprovalTimeout         = time.Second
	MaxActivityNameChars       = 200
	MaxTaskQueueChars          = 200
	MaxCapabilityParamsBytes   = 16_000
	DefaultRetryInitial        = time.Second
	DefaultRetryBackoff        = 2.0
	DefaultRetryMaxInterval    = time.Minute
	DefaultRetryMaxAttempts    = 5
	MinRetryInterval           = 10 * time.Millisecond
	MaxRetryInitialInterval    = time.Hour
	MaxRetryMaxInterval        = 24 * time.Hour
	MaxRetryBackoffCoefficient = 100.0
	MaxRetryAttempts           = 100
)

// Capability is a tool the model can call.
type Capability struct {
	Name        string     `json:"name"`
	Kind        string     `json:"kind"`
	Description string     `json:"description,omitempty"`
	Condition   string     `json:"condition,omitempty"` // CEL; offered only when it holds
	Agent       *AgentSpec `json:"agent,omitempty"`     // delegate: the agent the sub-task runs

	// Activity is the activity type an activity capability runs (1 to 200
	// characters), registered by a worker of the caller's on TaskQueue.
	Activity string `json:"activity,omitempty"`
	// TaskQueue is where that activity runs; empty: the task's own queue.
	TaskQueue string `json:"taskQueue,omitempty"`
	// Parameters is the argument schema (seed 003's subset, an object at the
	// top) the model's arguments must fit; absent: {"type": "object"}.
	Parameters json.RawMessage `json:"parameters,omitempty"`
	// StartToCloseTimeout bounds one attempt (Go duration, 1s to 24h); empty: 30s.
	StartToCloseTimeout string `json:"startToCloseTimeout,omitempty"`
	// StartTimeout bounds how long a call waits for a worker on TaskQueue
	// to pick it up (Go duration, 1s to 24h); empty: 1m. A queue nobody
	// polls (a typo) ends the call then, and the model reads why.
	StartTimeout string `json:"startTimeout,omitempty"`
	// CallTimeout bounds the whole call, every attempt and wait included
	// (Go duration, 1s to 24h); empty: 10m.
	CallTimeout string `json:"timeout,omitempty"`
	// Retry overrides the default retry policy key by key; nil: the default
	// (see CapabilityRetry).
	Retry *CapabilityRetry `json:"retry,omitempty"`

	// Approval is "never" (empty means never) or "always": whether every
	// call waits for a person's decision before it runs. Any kind.
	Approval string `json:"approval,omitempty"`
	// ApprovalCondition is CEL over args, variables and collected: a call
	// for which it is true (or fails to evaluate) waits for a decision.
	ApprovalCondition string `json:"approvalCondition,omitempty"`
	// ApprovalTimeout (Go duration, at least 1s) denies a pending approval
	// with reason "approval timed out"; empty: it waits without limit.
	ApprovalTimeout string `json:"approvalTimeout,omitempty"`
}

// CapabilityRetry is an activity capability's retry policy; each key left
// out keeps its default: initialInterval 1s, backoffCoefficient 2,
// maximumInterval 1m (or initialInterval when that is longer),
// maximumAttempts 5 (the first attempt included). Non-retryable application
// errors are never retried.
type CapabilityRetry struct {
	InitialInterval    string  `json:"initialInterval,omitempty"`    // Go duration, 10ms to 1h
	BackoffCoefficient float64 `json:"backoffCoefficient,omitempty"` // 1 to 100
	MaximumInterval    string  `json:"maximumInterval,omitempty"`    // Go duration, initialInterval to 24h
	MaximumAttempts    int     `json:"maximumAttempts,omitempty"`    // 1 to 100
}

// RetryPolicy is an effective retry policy in plain values, for the
// workflow to turn into a temporal.RetryPolicy.
type RetryPolicy struct {
	InitialInterval    time.Duration
	BackoffCoefficient float64
	MaximumInterval    time.Duration
	MaximumAttempts    int
}

// Policy is the effective policy: r's keys over the defaults. A nil r (no
// "retry" key) gives the defaults. Values are assumed checked
// (CheckAgent); one that does not parse keeps its default.
func (r *CapabilityRetry) Policy() RetryPolicy {
	p := RetryPolicy{
		InitialInterval:    DefaultRetryInitial,
		BackoffCoefficient: DefaultRetryBackoff,
		MaximumInterval:    DefaultRetryMaxInterval,
		MaximumAttempts:    DefaultRetryMaxAttempts,
	}
	if r == nil {
		return p
	}
	if d, err := time.ParseDuration(r.InitialInterval); err == nil && d > 0 {
		p.InitialInterval = d
	}
	if r.BackoffCoefficient >= 1 {
		p.BackoffCoefficient = r.BackoffCoefficient
	}
	if d, err := time.ParseDuration(r.MaximumInterval); err == nil && d > 0 {
		p.MaximumInterval = d
	} else if p.InitialInterval > p.MaximumInterval {
		p.MaximumInterval = p.InitialInterval
	}
	if r.MaximumAttempts > 0 {
		p.MaximumAttempts = r.MaximumAttempts
	}
	return p
}

// RetryPolicy is the capability's effective retry policy (activity kind).
func (c Capability) RetryPolicy() RetryPolicy { return c.Retry.Policy() }

// Timeout is an activity capability's start-to-close timeout: its
// startToCloseTimeout, or 30s when empty (or, unchecked, invalid).
func (c Capability) Timeout() time.Duration {
	if d, err := time.ParseDuration(c.StartToCloseTimeout); err == nil && d > 0 {
		return d
	}
	return DefaultCapabilityTimeout
}

// StartWait is an activity capability's schedule-to-start bound.
func (c Capability) StartWait() time.Duration {
	if d, err := time.ParseDuration(c.StartTimeout); err == nil && d > 0 {
		return d
	}
	return DefaultCapabilityStart
}

// CallWait is an activity capability's schedule-to-close bound: the whole
// call, never shorter than one attempt's bound.
func (c Capability) CallWait() time.Duration {
	d, err := time.ParseDuration(c.CallTimeout)
	if err != nil || d <= 0 {
		d = DefaultCapabilityCall
	}
	return max(d, c.Timeout())
}

// ApprovalWait is how long a pending approval waits before it is denied
// with "approval timed out"; 0: without limit.
func (c Capability) ApprovalWait() time.Duration {
	if d, err := time.ParseDuration(c.ApprovalTimeout); err == nil && d > 0 {
		return d
	}
	return 0
}

// NeedsApprovalAlways reports whether every call waits for a decision
// ("approval": "always"). A call may also need one by its
// approvalCondition (guard.ApprovalNeeded).
func (c Capability) NeedsApprovalAlways() bool { return c.Approval == ApprovalAlways }

// MayNeedApproval reports whether any call may wait for a decision: approval
// is "always" or an approvalCondition is set.
func (c Capability) MayNeedApproval() bool {
	return c.NeedsApprovalAlways() || c.ApprovalCondition != ""
}

// ToolParameters is the argument schema an activity capability offers the
// model: its parameters, or {"type": "object"} when it declares none.
func (c Capability) ToolParameters() json.RawMessage {
	if hasJSON(c.Parameters) {
		return c.Parameters
	}
	return json.RawMessage(defaultCapabilityParams)
}

const defaultCapabilityParams = `{"type":"object"}`

func hasJSON(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }

// Limits of the runtime. Bytes are decimal where the seeds say KB.
const (
	MaxInlineTextBytes   = 100_000    // seed 001: a text part's inline budget
	MaxMetadataBytes     = 8_000      // seed 001: a part's metadata, serialised
	MaxInputBytes        = 256 << 10  // one TaskIO, serialised: keeps every payload well under 512 KiB
	MaxAgentSpecBytes    = 128 << 10  // the agent travels with every model call
	DefaultContextTokens = 128_000    // when the agent names none
	MaxContextTokens     = 10_000_000 // sanity bound
	MaxTokensLimit       = 1_000_000  // sanity bound on maxTokens
	BytesPerToken        = 4          // the window estimate: conservative for English text
)

var agentNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// Agent is an AgentSpec whose schemas are compiled.
type Agent struct {
	Spec       AgentSpec
	Parameters *Compiled // nil: the agent takes no parameters
	Exposes    *Compiled // nil: outputs carry no dynamic keys
	Answer     *Compiled // nil: a JSON agent's answer may be any object (or the agent is not JSON)
	// ParseRef checks a file reference against the agent's mount root and
	// returns its path; set by the caller that knows the mount rules
	// (package mount), nil when the agent has no mount.
	ParseRef func(root, ref string) (string, error)
	// CapabilityParams holds, by capability name, the compiled argument
	// schema of every activity capability ({"type": "object"} when it
	// declares none); see CheckCapabilityArgs.
	CapabilityParams map[string]*Compiled
}

// CheckCapabilityArgs checks a call's arguments (JSON text) against the
// activity capability name's parameters. It returns the violations by path,
// sorted (nil: the arguments fit), for the model to correct; empty
// arguments count as {}. A capability without compiled parameters (not an
// activity capability) accepts any object.
func (a *Agent) CheckCapabilityArgs(name string, args json.RawMessage) []Violation {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(args, &obj); err != nil || obj == nil {
		return []Violation{{Path: "/", Message: "the arguments must be one JSON object"}}
	}
	c := a.CapabilityParams[name]
	if c == nil {
		return nil
	}
	return c.Validate(obj)
}

var capabilityNameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// checkCapabilityShapes checks what schema alone can: names, kinds, nesting.
// Mount URLs and CEL expressions are checked by their packages.
func checkCapabilityShapes(path string, s AgentSpec) error {
	if s.Mount != nil && (s.Mount.Root == "" || (s.Mount.Name == "") == (s.Mount.URL == "")) {
		return Invalid("%s.mount: needs \"root\" (e.g. \"task\") and the \"name\" of a mount the operator configured (e.g. \"files\"), as {\"root\": \"task\", \"name\": \"files\"}", path)
	}
	seen := map[string]bool{}
	for i, g := range s.Guardrails {
		p := fmt.Sprintf("%s.guardrails[%d]", path, i)
		if g.Name == "" || len(g.Name) > 63 {
			return Invalid("%s.name: 1 to 63 characters", p)
		}
		if seen["g:"+g.Name] {
			return Invalid("%s.name: %q is used twice", p, g.Name)
		}
		seen["g:"+g.Name] = true
		if g.Expression == "" || g.Message == "" {
			return Invalid("%s: needs an expression and the message a refused caller reads", p)
		}
	}
	for i, c := range s.Capabilities {
		p := fmt.Sprintf("%s.capabilities[%d]", path, i)
		if !capabilityNameRE.MatchString(c.Name) {
			return Invalid("%s.name: %q must be 1 to 64 letters, digits, '_' or '-'", p, c.Name)
		}
		if seen["c:"+c.Name] {
			return Invalid("%s.name: %q is used twice", p, c.Name)
		}
		seen["c:"+c.Name] = true
		switch c.Kind {
		case CapabilityDelegate:
			if c.Agent == nil {
				return Invalid("%s.agent: a delegate capability names the agent its sub-task runs", p)
			}
			if len(c.Agent.Capabilities) > 0 {
				return Invalid("%s.agent.capabilities: a delegated agent cannot delegate further in this version", p)
			}
			if key := activityOnlyKey(c); key != "" {
				return Invalid("%s.%s: only an activity capability (\"kind\": \"activity\") takes %q; a delegate capability's arguments are its agent's message and files", p, key, key)
			}
		case CapabilityActivity:
			if err := checkActivityCapability(p, c); err != nil {
				return err
			}
		default:
			return Invalid("%s.kind: %q is not a capability kind; use \"delegate\" (another agent as a sub-task) or \"activity\" (an activity of your worker)", p, c.Kind)
		}
		if err := checkApproval(p, c); err != nil {
			return err
		}
	}
	return nil
}

// activityOnlyKey names the first activity-only key c sets, or "".
func activityOnlyKey(c Capability) string {
	switch {
	case c.Activity != "":
		return "activity"
	case c.TaskQueue != "":
		return "taskQueue"
	case hasJSON(c.Parameters):
		return "parameters"
	case c.StartToCloseTimeout != "":
		return "startToCloseTimeout"
	case c.StartTimeout != "":
		return "startTimeout"
	case c.CallTimeout != "":
		return "timeout"
	case c.Retry != nil:
		return "retry"
	}
	return ""
}

// checkName checks an activity type or task queue name: 1 to max
// characters of valid UTF-8, no control characters, no surrounding spaces.
func checkName(path, what, example, v string, max int) error {
	switch {
	case v == "":
		return Invalid("%s: an activity capability needs the %s, e.g. %s", path, what, example)
	case !utf8.ValidString(v) || utf8.RuneCountInString(v) > max:
		return Invalid("%s: %q must be 1 to %d characters of valid UTF-8", path, v, max)
	case strings.IndexFunc(v, unicode.IsControl) >= 0:
		return Invalid("%s: %q must not contain control characters", path, v)
	case strings.TrimSpace(v) != v:
		return Invalid("%s: %q must not start or end with spaces", path, v)
	}
	return nil
}

// checkDuration parses a Go duration between min and max (max 0: no bound).
func checkDuration(path, v string, min, max time.Duration, hint string) error {
	d, err := time.ParseDuration(v)
	if err != nil {
		return Invalid("%s: %q is not a Go duration such as \"30s\", \"5m\" or \"1h\"%s", path, v, hint)
	}
	if d < min || (max > 0 && d > max) {
		if max > 0 {
			return Invalid("%s: %s must be between %s and %s%s", path, v, fmtDuration(min), fmtDuration(max), hint)
		}
		return Invalid("%s: %s must be at least %s%s", path, v, fmtDuration(min), hint)
	}
	return nil
}

// fmtDuration writes round durations as people do: 24h, 1m, 1s, 10ms.
func fmtDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

func checkActivityCapability(p string, c Capability) error {
	if c.Agent != nil {
		return Invalid("%s.agent: only a delegate capability names an agent; an activity capability names its \"activity\" (and optionally \"taskQueue\")", p)
	}
	if err := checkName(p+".activity", "activity type a worker of yours registered", `"activity": "IssueRefund"`, c.Activity, MaxActivityNameChars); err != nil {
		return err
	}
	if c.TaskQueue != "" {
		if err := checkName(p+".taskQueue", "task queue", `"taskQueue": "payments"`, c.TaskQueue, MaxTaskQueueChars); err != nil {
			return err
		}
	}
	if hasJSON(c.Parameters) {
		if len(c.Parameters) > MaxCapabilityParamsBytes {
			return Invalid("%s.parameters: %d bytes, more than %d", p, len(c.Parameters), MaxCapabilityParamsBytes)
		}
		if _, err := Compile(p+".parameters", c.Parameters); err != nil {
			return err
		}
	}
	if c.StartToCloseTimeout != "" {
		if err := checkDuration(p+".startToCloseTimeout", c.StartToCloseTimeout, MinCapabilityTimeout, MaxCapabilityTimeout, ", or left out for 30s"); err != nil {
			return err
		}
	}
	if c.StartTimeout != "" {
		if err := checkDuration(p+".startTimeout", c.StartTimeout, MinCapabilityTimeout, MaxCapabilityTimeout, ", or left out for 1m"); err != nil {
			return err
		}
	}
	if c.CallTimeout != "" {
		if err := checkDuration(p+".timeout", c.CallTimeout, MinCapabilityTimeout, MaxCapabilityTimeout, ", or left out for 10m"); err != nil {
			return err
		}
		if d, _ := time.ParseDuration(c.CallTimeout); d < c.Timeout() {
			return Invalid("%s.timeout: %s is shorter than one attempt's startToCloseTimeout (%s); make it at least as long", p, c.CallTimeout, fmtDuration(c.Timeout()))
		}
	}
	if r := c.Retry; r != nil {
		rp := p + ".retry"
		if r.InitialInterval != "" {
			if err := checkDuration(rp+".initialInterval", r.InitialInterval, MinRetryInterval, MaxRetryInitialInterval, ", or left out for 1s"); err != nil {
				return err
			}
		}
		if r.BackoffCoefficient != 0 && (r.BackoffCoefficient < 1 || r.BackoffCoefficient > MaxRetryBackoffCoefficient) {
			return Invalid("%s.backoffCoefficient: %v must be between 1 and %v, or left out for 2", rp, r.BackoffCoefficient, MaxRetryBackoffCoefficient)
		}
		if r.MaximumInterval != "" {
			if err := checkDuration(rp+".maximumInterval", r.MaximumInterval, MinRetryInterval, MaxRetryMaxInterval, ", or left out for 1m"); err != nil {
				return err
			}
			if pol := r.Policy(); pol.MaximumInterval < pol.InitialInterval {
				return Invalid("%s.maximumInterval: %s is shorter than the initial interval (%s); make it at least as long", rp, r.MaximumInterval, fmtDuration(pol.InitialInterval))
			}
		}
		if r.MaximumAttempts < 0 || r.MaximumAttempts > MaxRetryAttempts {
			return Invalid("%s.maximumAttempts: %d must be between 1 and %d (the first attempt included), or left out for %d", rp, r.MaximumAttempts, MaxRetryAttempts, DefaultRetryMaxAttempts)
		}
	}
	return nil
}

// checkApproval checks the approval keys, which every kind takes. The
// condition's CEL is type-checked by package guard (CheckApprovalCondition).
func checkApproval(p string, c Capability) error {
	switch c.Approval {
	case "", ApprovalNever, ApprovalAlways:
	default:
		return Invalid("%s.approval: %q must be \"never\" (the default) or \"always\"; to ask only for some calls, set \"approvalCondition\"", p, c.Approval)
	}
	if c.Approval == ApprovalAlways && c.ApprovalCondition != "" {
		return Invalid("%s.approvalCondition: with \"approval\": \"always\" every call waits for a decision, so the condition would never matter; drop one of the two", p)
	}
	if c.ApprovalCondition != "" && strings.TrimSpace(c.ApprovalCondition) == "" {
		return Invalid("%s.approvalCondition: the expression is empty; write a CEL expression over args, variables and collected that returns bool, e.g. args.amount > 100", p)
	}
	if c.ApprovalTimeout != "" {
		if !c.MayNeedApproval() {
			return Invalid("%s.approvalTimeout: this capability never waits for approval; set \"approval\": \"always\" or an \"approvalCondition\", or drop the timeout", p)
		}
		if err := checkDuration(p+".approvalTimeout", c.ApprovalTimeout, MinApprovalTimeout, 0, ", or left out to wait without limit"); err != nil {
			return err
		}
	}
	return nil
}

// CheckAgent validates a spec and compiles its schemas. path prefixes errors ("agent").
func CheckAgent(path string, s AgentSpec) (*Agent, error) {
	if !agentNameRE.MatchString(s.Name) {
		return nil, Invalid("%s.name: %q must be 1 to 63 lowercase letters, digits and hyphens, starting with a letter or digit", path, s.Name)
	}
	provider, model, ok := strings.Cut(s.Model, "/")
	if !ok || provider == "" || model == "" {
		return nil, Invalid("%s.model: %q must be \"provider/model\", e.g. \"openai/gpt-4o-mini\"", path, s.Model)
	}
	if s.MaxTokens < 0 || s.MaxTokens > MaxTokensLimit {
		return nil, Invalid("%s.maxTokens: %d must be between 1 and %d, or left out for the model's default", path, s.MaxTokens, MaxTokensLimit)
	}
	if s.Temperature != nil && (*s.Temperature < 0 || *s.Temperature > 2) {
		return nil, Invalid("%s.temperature: %v must be between 0 and 2, or left out for the model's default", path, *s.Temperature)
	}
	if s.TopP != nil && (*s.TopP < 0 || *s.TopP > 1) {
		return nil, Invalid("%s.topP: %v must be between 0 and 1, or left out for the model's default", path, *s.TopP)
	}
	switch s.ReasoningEffort {
	case "", "low", "medium", "high":
	default:
		return nil, Invalid("%s.reasoningEffort: %q must be low, medium or high, or left out", path, s.ReasoningEffort)
	}
	if s.ContextTokens < 0 || s.ContextTokens > MaxContextTokens {
		return nil, Invalid("%s.contextTokens: %d must be between 1 and %d, or left out for %d", path, s.ContextTokens, MaxContextTokens, DefaultContextTokens)
	}
	if s.ContextTokens > 0 && s.MaxTokens >= s.ContextTokens {
		return nil, Invalid("%s.maxTokens: %d leaves no room in a context of %d tokens", path, s.MaxTokens, s.ContextTokens)
	}
	if b, _ := json.Marshal(s); len(b) > MaxAgentSpecBytes {
		return nil, Invalid("%s: %d bytes serialised, more than the %d allowed; move long instructions or schemas into files", path, len(b), MaxAgentSpecBytes)
	}
	a := &Agent{Spec: s}
	if err := checkCapabilityShapes(path, s); err != nil {
		return nil, err
	}
	var err error
	if len(s.Parameters) > 0 && string(s.Parameters) != "null" {
		if a.Parameters, err = compileDynamic(path+".parameters", s.Parameters); err != nil {
			return nil, err
		}
	}
	for i, c := range s.Capabilities {
		if c.Kind != CapabilityActivity {
			continue
		}
		if a.CapabilityParams == nil {
			a.CapabilityParams = map[string]*Compiled{}
		}
		p := fmt.Sprintf("%s.capabilities[%d].parameters", path, i)
		if a.CapabilityParams[c.Name], err = Compile(p, c.ToolParameters()); err != nil {
			return nil, err
		}
	}
	if len(s.Exposes) > 0 && string(s.Exposes) != "null" {
		if a.Exposes, err = compileDynamic(path+".exposes", s.Exposes); err != nil {
			return nil, err
		}
	}
	if hasSchema := len(s.Schema) > 0 && string(s.Schema) != "null"; hasSchema || s.JSON {
		switch {
		case !s.JSON:
			return nil, Invalid("%s.schema: a schema needs \"json\": true", path)
		case a.Exposes != nil || s.Mount != nil:
			return nil, Invalid("%s.json: a JSON agent's answer is its object; it cannot also have exposes or a mount", path)
		case hasSchema && len(s.Schema) > MaxAnswerSchemaBytes:
			return nil, Invalid("%s.schema: %d bytes, more than %d", path, len(s.Schema), MaxAnswerSchemaBytes)
		case hasSchema:
			if a.Answer, err = Compile(path+".schema", s.Schema); err != nil {
				return nil, err
			}
		}
	}
	return a, nil
}

// compileDynamic compiles a parameters or exposes schema: a subset schema
// whose top-level properties are dynamic TaskIO keys, so the well-known keys
// (seed 000 rule 4) and the projection's `type` are refused.
func compileDynamic(path string, raw json.RawMessage) (*Compiled, error) {
	c, err := Compile(path, raw)
	if err != nil {
		return nil, err
	}
	for _, p := range c.Properties() {
		if IsWellKnownKey(p) {
			if p == KeyType {
				return nil, Invalid("%s.properties.%s: %q is the messages projection's own field; name the property differently", path, p, p)
			}
			return nil, Invalid("%s.properties.%s: %q is a well-known TaskIO key (seed 000 rule 4) that a schema must not supply; name the property differently", path, p, p)
		}
	}
	return c, nil
}

// ContextBudgetBytes is how many bytes of conversation fit a model request.
func (s AgentSpec) ContextBudgetBytes() int {
	ctx := s.ContextTokens
	if ctx == 0 {
		ctx = DefaultContextTokens
	}
	room := ctx - s.MaxTokens
	if s.MaxTokens == 0 {
		room = ctx - ctx/8 // leave an eighth for the answer when no limit is set
	}
	room -= (len(s.Instructions) + len(s.Parameters) + len(s.Exposes)) / BytesPerToken
	if room < 256 {
		room = 256
	}
	return room * BytesPerToken
}
