package guard

// Approval conditions (docs/content.md#approvals): a capability's
// approvalCondition decides, per call, whether the call waits for a person's
// decision before it runs.
//
// Expressions see three variables, in an environment of their own (not `i`
// nor `context`):
//
//   - args: map(string, dyn), the call's arguments (a JSON object; integral
//     numbers are int, others double, objects maps), e.g. args.amount > 100;
//   - variables: map(string, string), the task's variables, e.g.
//     variables.tier == "gold";
//   - collected: map(string, dyn), what the task collected, by name, each a
//     JSON value, e.g. "limit" in collected && args.amount > collected.limit.
//
// Evaluation runs in workflow code, so it is deterministic as conditions
// are: programs are memoised by text, maps iterate in sorted key order, no
// function reads the clock or randomness, and every evaluation is bounded
// by CostLimit with the same meter. It fails safe: an expression that fails
// to evaluate (a missing key, a wrong type, the cost limit, arguments that
// are not a JSON object) means the call needs approval.

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"

	"github.com/agenttask/agenttask/contract"
)

const (
	varArgs      = "args"
	varVariables = "variables"
	varCollected = "collected"
)

// approvalEnvOnce builds the environment of approval conditions, with the
// same limits and options as guardrails and capability conditions.
var approvalEnvOnce = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable(varArgs, cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable(varVariables, cel.MapType(cel.StringType, cel.StringType)),
		cel.Variable(varCollected, cel.MapType(cel.StringType, cel.DynType)),
		cel.CrossTypeNumericComparisons(true),
		cel.ParserExpressionSizeLimit(MaxExpressionBytes),
		cel.ParserRecursionLimit(64),
		cel.ExpressionNodeLimit(2_000),
		cel.ASTValidators(cel.ValidateRegexProgramSizeLimit(regexProgramLimit)),
	)
})

// approvalProgram is a compiled approval condition and the variables it reads.
type approvalProgram struct {
	*program
	readsArgs, readsVariables, readsCollected bool
}

var (
	approvalCache      sync.Map // expression text -> *approvalProgram
	approvalCacheCount atomic.Int64
)

// compileApproval returns the compiled form of expr, memoised by its text
// (the result depends only on the text, so the memo is pure).
func compileApproval(expr string) *approvalProgram {
	if p, ok := approvalCache.Load(expr); ok {
		return p.(*approvalProgram)
	}
	p := buildApproval(expr)
	if approvalCacheCount.Load() < maxCachedPrograms {
		if _, loaded := approvalCache.LoadOrStore(expr, p); !loaded {
			approvalCacheCount.Add(1)
		}
	}
	return p
}

func buildApproval(expr string) *approvalProgram {
	fail := func(err error) *approvalProgram { return &approvalProgram{program: &program{err: err}} }
	if len(expr) > MaxExpressionBytes {
		return fail(fmt.Errorf("%d bytes, more than the %d allowed", len(expr), MaxExpressionBytes))
	}
	if !utf8.ValidString(expr) {
		return fail(fmt.Errorf("not valid UTF-8"))
	}
	env, err := approvalEnvOnce()
	if err != nil {
		return fail(fmt.Errorf("CEL environment: %w", err))
	}
	// cel-go ranges over its own maps while it checks; the checked program
	// depends on the text alone, and its issues print sorted by position.
	//workflowcheck:ignore
	checked, iss := env.Compile(expr)
	if iss != nil && iss.Err() != nil {
		return fail(iss.Err())
	}
	out := checked.OutputType()
	if !out.IsExactType(cel.BoolType) && !out.IsExactType(cel.DynType) {
		return fail(fmt.Errorf("the expression returns %s; it must return bool", out))
	}
	native := checked.NativeRep()
	if err := checkConstantRegexes(native.Expr()); err != nil {
		return fail(err)
	}
	if err := refuseStructs(native.Expr()); err != nil {
		return fail(err)
	}
	p := &approvalProgram{
		program: &program{
			env:          env,
			checked:      checked,
			accumulators: accumulators(native.Expr()),
		},
		readsArgs:      readsVar(native.Expr(), varArgs),
		readsVariables: readsVar(native.Expr(), varVariables),
		readsCollected: readsVar(native.Expr(), varCollected),
	}
	in, err := p.plan() // surfaces planning errors at check time
	if err != nil {
		return fail(err)
	}
	p.put(in)
	return p
}

// CheckApprovalCondition type-checks a capability's approvalCondition at
// task start (path e.g. "agent.capabilities[0].approvalCondition"): it must
// compile against args, variables and collected, return bool, and be at
// most MaxExpressionBytes long. A bad expression is an INVALID_INPUT error
// naming path and carrying the CEL error text.
func CheckApprovalCondition(path, expr string) error {
	if expr == "" {
		return nil // no condition: only "approval": "always" asks
	}
	if strings.TrimSpace(expr) == "" {
		return contract.Invalid("%s: the expression is empty; write a CEL expression over args, variables and collected that returns bool, e.g. args.amount > 100", path)
	}
	if p := compileApproval(expr); p.err != nil {
		return contract.Invalid("%s: %s (an approval condition sees args, the call's arguments; variables, the task's variables; and collected, what the task collected, by name)", path, truncate(p.err.Error(), maxErrorBytes))
	}
	return nil
}

// ApprovalNeeded evaluates an approval condition on one call: args is the
// call's arguments (a JSON object; empty counts as {}), variables the task's
// variables, collected what the task collected by name (each a JSON value).
// It fails safe: when the expression does not compile, the inputs cannot be
// read, or the evaluation fails or does not return a bool, it reports true
// (the call needs approval) with the error, for logging. An empty expression
// needs no approval. Deterministic; safe in workflow code.
func ApprovalNeeded(expr string, args json.RawMessage, variables map[string]string, collected map[string]json.RawMessage) (bool, error) {
	if expr == "" {
		return false, nil
	}
	p := compileApproval(expr)
	if p.err != nil {
		return true, fmt.Errorf("the expression does not compile: %s", truncate(p.err.Error(), maxErrorBytes))
	}
	vars := map[string]any{
		varArgs:      emptyMap,
		varVariables: emptyMap,
		varCollected: emptyMap,
	}
	if p.readsArgs {
		v, err := argsValue(args)
		if err != nil {
			return true, err
		}
		vars[varArgs] = v
	}
	if p.readsVariables && len(variables) > 0 {
		m := make(map[string]ref.Val, len(variables))
		for _, k := range sortedKeys(variables) {
			m[jsonKey(k)] = jsonString(variables[k])
		}
		vars[varVariables] = newOrderedMap(m)
	}
	if p.readsCollected && len(collected) > 0 {
		m := make(map[string]ref.Val, len(collected))
		for _, k := range sortedKeys(collected) {
			raw := collected[k]
			if len(raw) == 0 {
				m[jsonKey(k)] = types.NullValue
				continue
			}
			v, err := jsonValue(raw)
			if err != nil {
				return true, fmt.Errorf("collected value %q cannot be read: %v", k, err)
			}
			m[jsonKey(k)] = v
		}
		vars[varCollected] = newOrderedMap(m)
	}
	ok, err := p.evalVars(vars)
	if err != nil {
		return true, err
	}
	return ok, nil
}

// emptyMap stands for a variable the expression does not read, or an empty
// one; its size memo is filled before concurrent evaluations can read it.
var emptyMap = func() ref.Val {
	m := newOrderedMap(map[string]ref.Val{})
	deepSize(m)
	return m
}()

// argsValue builds `args` from the call's arguments, which must be one JSON object.
func argsValue(args json.RawMessage) (ref.Val, error) {
	if len(args) == 0 {
		return emptyMap, nil
	}
	v, err := jsonValue(args)
	if err != nil {
		return nil, fmt.Errorf("the arguments are not valid JSON: %v", err)
	}
	if _, ok := v.(*orderedMap); !ok {
		return nil, fmt.Errorf("the arguments are not a JSON object")
	}
	return v, nil
}

// evalVars evaluates the program on vars within CostLimit.
func (p *program) evalVars(vars map[string]any) (result bool, err error) {
	inst, err := p.get(CostLimit)
	if err != nil {
		return false, fmt.Errorf("the expression cannot be planned: %v", err)
	}
	defer func() {
		// cel.Program.Eval recovers its own panics; this is a last resort.
		if r := recover(); r != nil {
			result, err = false, fmt.Errorf("evaluation panicked: %v", r)
			return // a panicking instance is not reused
		}
		p.put(inst)
	}()
	out, _, err := inst.prg.Eval(vars)
	if err != nil {
		return false, err
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, fmt.Errorf("the expression returned %s, not bool", out.Type().TypeName())
	}
	return bool(b), nil
}
