// Package guard evaluates the CEL expressions an agent declares: guardrails,
// which refuse an input whose expression is false or fails, and capability
// conditions, which offer a capability to the model only while they hold
// (docs/content.md#cel).
//
// Expressions see two variables:
//
//   - i: list(map(string, dyn)), the content parts being judged, each the
//     part's JSON object (mimeType, text, file, sizeBytes, metadata); absent
//     fields are absent keys, so has(i[0].file) tells a file from a text part.
//   - context: map(string, dyn) with input and output, the task's committed
//     TaskIO lists as flat JSON objects, read positionally
//     (context.input[0].ticket_id).
//
// Everything here is pure and deterministic so workflow code may call it:
// programs are compiled once per process (memoised by expression text), map
// keys iterate in sorted order, and every evaluation is bounded by CostLimit.
package guard

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"

	"github.com/agenttask/agenttask/contract"
)

// MaxGuardrailNameChars caps a guardrail's name.
const MaxGuardrailNameChars = 63

// Guardrail is one agent guardrail: an input for which Expression is false,
// or fails to evaluate, is refused with Message.
type Guardrail struct {
	Name       string `json:"name"`
	Expression string `json:"expression"`
	Message    string `json:"message"`
}

// Context is what expressions see as `context`: the task's committed inputs
// and outputs.
type Context struct {
	Input  []contract.TaskIO
	Output []contract.TaskIO
}

// CheckExpression type-checks expr at task start: it must compile against the
// environment, return bool, and be at most MaxExpressionBytes long. A dyn
// result (a bare parameter read such as context.input[0].approved) is
// accepted and must be a bool when evaluated. A bad expression is an
// INVALID_INPUT error naming path and carrying the CEL error text.
func CheckExpression(path, expr string) error {
	if strings.TrimSpace(expr) == "" {
		return contract.Invalid("%s: the expression is empty; write a CEL expression that returns bool, e.g. size(i) > 0", path)
	}
	if p := compile(expr); p.err != nil {
		return contract.Invalid("%s: %s", path, truncate(p.err.Error(), maxErrorBytes))
	}
	return nil
}

// maxErrorBytes caps the CEL error text a refusal carries: CEL quotes the
// offending source line with each issue, and an expression may be 4 KB.
const maxErrorBytes = 2000

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + " …(truncated)"
}

// CheckGuardrails checks a guardrail list at task start (path e.g.
// "agent.guardrails"): each name is 1 to 63 characters and unique, each
// message is non-empty, and each expression passes CheckExpression.
func CheckGuardrails(path string, gs []Guardrail) error {
	seen := make(map[string]int, len(gs))
	for k, g := range gs {
		p := fmt.Sprintf("%s[%d]", path, k)
		n := utf8.RuneCountInString(g.Name)
		switch {
		case strings.TrimSpace(g.Name) == "":
			return contract.Invalid("%s.name: a guardrail needs a name (1 to %d characters)", p, MaxGuardrailNameChars)
		case !utf8.ValidString(g.Name) || n > MaxGuardrailNameChars:
			return contract.Invalid("%s.name: %q must be 1 to %d characters of valid UTF-8", p, g.Name, MaxGuardrailNameChars)
		case strings.IndexFunc(g.Name, unicode.IsControl) >= 0:
			return contract.Invalid("%s.name: %q must not contain control characters", p, g.Name)
		}
		if prev, dup := seen[g.Name]; dup {
			return contract.Invalid("%s.name: %q is already the name of %s[%d]; guardrail names must be unique", p, g.Name, path, prev)
		}
		seen[g.Name] = k
		if strings.TrimSpace(g.Message) == "" {
			return contract.Invalid("%s.message: a guardrail needs a message telling the sender why the input was refused", p)
		}
		if err := CheckExpression(p+".expression", g.Expression); err != nil {
			return err
		}
	}
	return nil
}

// UsesContext reports whether expr reads `context`, so a caller can skip
// building a large context when it does not. It fails as CheckExpression does.
func UsesContext(expr string) (bool, error) {
	p := compile(expr)
	if p.err != nil {
		return false, contract.Invalid("expression: %s", truncate(p.err.Error(), maxErrorBytes))
	}
	return p.usesContext, nil
}

// EvaluateGuardrails runs gs in order on one input's parts. The first
// guardrail that is false or fails to evaluate refuses the input with a
// GUARDRAIL error: "<message> (guardrail <name>)", followed by
// "; evaluation error: <error>" when it failed. nil means the input passes.
func EvaluateGuardrails(gs []Guardrail, parts []contract.ContentPart, ctx Context) error {
	if len(gs) == 0 {
		return nil
	}
	acts := newActivation(parts, ctx)
	for _, g := range gs {
		ok, err := acts.eval(g.Expression)
		if err != nil {
			return &contract.Error{Type: contract.ErrGuardrail, Message: fmt.Sprintf("%s (guardrail %s); evaluation error: %v", g.Message, g.Name, err)}
		}
		if !ok {
			return &contract.Error{Type: contract.ErrGuardrail, Message: fmt.Sprintf("%s (guardrail %s)", g.Message, g.Name)}
		}
	}
	return nil
}

// Condition evaluates one capability condition on the parts a model call
// commits. An evaluation error counts as false and is returned for logging.
func Condition(expr string, parts []contract.ContentPart, ctx Context) (bool, error) {
	return newActivation(parts, ctx).eval(expr)
}

// activation builds `i` once and `context` only when an expression reads it.
type activation struct {
	parts []contract.ContentPart
	ctx   Context

	in, context ref.Val
	inErr       error
	inDone      bool
}

func newActivation(parts []contract.ContentPart, ctx Context) *activation {
	return &activation{parts: parts, ctx: ctx}
}

func (a *activation) eval(expr string) (bool, error) {
	ok, _, err := a.run(expr)
	return ok, err
}

// run evaluates expr and reports the meter units it used.
func (a *activation) run(expr string) (result bool, cost uint64, err error) {
	p := compile(expr)
	if p.err != nil {
		return false, 0, fmt.Errorf("the expression does not compile: %s", truncate(p.err.Error(), maxErrorBytes))
	}
	if !a.inDone {
		a.inDone = true
		a.in, a.inErr = partsValue(a.parts)
	}
	if a.inErr != nil {
		return false, 0, fmt.Errorf("reading the content parts: %v", a.inErr)
	}
	inst, err := p.get(CostLimit)
	if err != nil {
		return false, 0, fmt.Errorf("the expression cannot be planned: %v", err)
	}
	m := inst.m
	vars := map[string]any{varInput: a.in}
	if p.usesContext {
		if a.context == nil {
			a.context = contextValue(a.ctx)
		}
		vars[varContext] = a.context
	} else {
		// Never read (UsesContext said so); declared variables still need a value.
		vars[varContext] = emptyContext
	}
	defer func() {
		// cel.Program.Eval recovers its own panics; this is a last resort.
		if r := recover(); r != nil {
			result, cost, err = false, m.used, fmt.Errorf("evaluation panicked: %v", r)
			return // a panicking instance is not reused
		}
		p.put(inst)
	}()
	out, _, err := inst.prg.Eval(vars)
	if err != nil {
		return false, m.used, err
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, m.used, fmt.Errorf("the expression returned %s, not bool", out.Type().TypeName())
	}
	return bool(b), m.used, nil
}

// emptyContext is shared by concurrent evaluations, so its size memos are
// filled before any of them can read it.
var emptyContext = func() ref.Val {
	m := contextValue(Context{})
	deepSize(m)
	return m
}()

// FromSpec converts an agent's guardrails (contract.AgentSpec.Guardrails).
func FromSpec(gs []contract.Guardrail) []Guardrail {
	out := make([]Guardrail, len(gs))
	for i, g := range gs {
		out[i] = Guardrail{Name: g.Name, Expression: g.Expression, Message: g.Message}
	}
	return out
}

// AnyReadsContext reports whether any guardrail reads `context`: those need
// the whole committed conversation, which lives in the transcript, so they
// run in an activity; the others run in workflow code.
func AnyReadsContext(gs []contract.Guardrail) bool {
	for _, g := range gs {
		if uses, err := UsesContext(g.Expression); err == nil && uses {
			return true
		}
	}
	return false
}
