package contract

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// AgentSpec describes the agent a task runs (docs/contract.md#agentspec).
// Keys are camelCase, as stored tasks have them; unknown keys are refused
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
	// part); Schema, when set, is what that object must fit (the schema
	// subset, subset.go). Violations go back to the model, as for exposes.
	JSON   bool            `json:"json,omitempty"`
	Schema json.RawMessage `json:"schema,omitempty"`
	// ContextTokens is the model's context size; the request is windowed to
	// fit it. 0 means DefaultContextTokens.
	ContextTokens int `json:"contextTokens,omitempty"`

	// Mount is where the agent's files live (docs/content.md): references
	// "<root>://<path>" name objects in the task's own space of that storage.
	Mount *MountSpec `json:"mount,omitempty"`
	// Guardrails refuse inputs: each expression (CEL) must hold for every input.
	Guardrails []Guardrail `json:"guardrails,omitempty"`
	// Capabilities the model may call, each offered only when its condition holds.
	Capabilities []Capability `json:"capabilities,omitempty"`
}

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

var agentNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// CheckAgent validates a spec and compiles its schemas. path prefixes errors ("agent").
func CheckAgent(path string, s AgentSpec) (*Agent, error) {
	if err := checkModelSettings(path, s); err != nil {
		return nil, err
	}
	if b, _ := json.Marshal(s); len(b) > MaxAgentSpecBytes {
		return nil, Invalid("%s: %d bytes serialised, more than the %d allowed; move long instructions or schemas into files", path, len(b), MaxAgentSpecBytes)
	}
	a := &Agent{Spec: s}
	if err := checkCapabilityShapes(path, s); err != nil {
		return nil, err
	}
	if err := a.compileSchemas(path); err != nil {
		return nil, err
	}
	return a, nil
}

// checkModelSettings checks the agent's name, its model and the settings
// sent with each model call.
func checkModelSettings(path string, s AgentSpec) error {
	if !agentNameRE.MatchString(s.Name) {
		return Invalid("%s.name: %q must be 1 to 63 lowercase letters, digits and hyphens, starting with a letter or digit", path, s.Name)
	}
	provider, model, ok := strings.Cut(s.Model, "/")
	if !ok || provider == "" || model == "" {
		return Invalid("%s.model: %q must be \"provider/model\", e.g. \"openai/gpt-4o-mini\"", path, s.Model)
	}
	if s.MaxTokens < 0 || s.MaxTokens > MaxTokensLimit {
		return Invalid("%s.maxTokens: %d must be between 1 and %d, or left out for the model's default", path, s.MaxTokens, MaxTokensLimit)
	}
	if s.Temperature != nil && (*s.Temperature < 0 || *s.Temperature > 2) {
		return Invalid("%s.temperature: %v must be between 0 and 2, or left out for the model's default", path, *s.Temperature)
	}
	if s.TopP != nil && (*s.TopP < 0 || *s.TopP > 1) {
		return Invalid("%s.topP: %v must be between 0 and 1, or left out for the model's default", path, *s.TopP)
	}
	switch s.ReasoningEffort {
	case "", "low", "medium", "high":
	default:
		return Invalid("%s.reasoningEffort: %q must be low, medium or high, or left out", path, s.ReasoningEffort)
	}
	if s.ContextTokens < 0 || s.ContextTokens > MaxContextTokens {
		return Invalid("%s.contextTokens: %d must be between 1 and %d, or left out for %d", path, s.ContextTokens, MaxContextTokens, DefaultContextTokens)
	}
	if s.ContextTokens > 0 && s.MaxTokens >= s.ContextTokens {
		return Invalid("%s.maxTokens: %d leaves no room in a context of %d tokens", path, s.MaxTokens, s.ContextTokens)
	}
	return nil
}

// compileSchemas compiles the agent's schemas, in this order: parameters,
// each activity capability's parameters, exposes, the JSON answer's schema.
func (a *Agent) compileSchemas(path string) error {
	s := a.Spec
	var err error
	if len(s.Parameters) > 0 && string(s.Parameters) != "null" {
		if a.Parameters, err = compileDynamic(path+".parameters", s.Parameters); err != nil {
			return err
		}
	}
	for i, c := range s.Capabilities {
		if !c.HasParameters() {
			continue
		}
		if a.CapabilityParams == nil {
			a.CapabilityParams = map[string]*Compiled{}
		}
		p := fmt.Sprintf("%s.capabilities[%d].parameters", path, i)
		if a.CapabilityParams[c.Name], err = Compile(p, c.ToolParameters()); err != nil {
			return err
		}
	}
	if len(s.Exposes) > 0 && string(s.Exposes) != "null" {
		if a.Exposes, err = compileDynamic(path+".exposes", s.Exposes); err != nil {
			return err
		}
	}
	if hasSchema := len(s.Schema) > 0 && string(s.Schema) != "null"; hasSchema || s.JSON {
		switch {
		case !s.JSON:
			return Invalid("%s.schema: a schema needs \"json\": true", path)
		case a.Exposes != nil || s.Mount != nil:
			return Invalid("%s.json: a JSON agent's answer is its object; it cannot also have exposes or a mount", path)
		case hasSchema && len(s.Schema) > MaxAnswerSchemaBytes:
			return Invalid("%s.schema: %d bytes, more than %d", path, len(s.Schema), MaxAnswerSchemaBytes)
		case hasSchema:
			if a.Answer, err = Compile(path+".schema", s.Schema); err != nil {
				return err
			}
		}
	}
	return nil
}

// compileDynamic compiles a parameters or exposes schema: a subset schema
// whose top-level properties are dynamic TaskIO keys, so the well-known keys
// (the well-known TaskIO keys, taskio.go) and the projection's `type` are refused.
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
