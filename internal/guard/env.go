package guard

import (
	"fmt"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
)

// Limits on expressions. They are part of the runtime's behaviour (workflow
// code replays them), so change them only with a versioning plan.
const (
	// MaxExpressionBytes caps an expression's source text.
	MaxExpressionBytes = 4096
	// CostLimit caps one evaluation's cost in meter units (meter.go: roughly
	// one per operation, more for operations over long strings and lists). An
	// evaluation that reaches it stops with an error, well within a second,
	// so a hostile expression cannot stall a workflow task.
	CostLimit = 500_000
	// maxCachedPrograms bounds the compilation memo; past it, expressions are
	// compiled per use (same result, only slower).
	maxCachedPrograms = 10_000

	varInput   = "i"
	varContext = "context"
)

// envOnce builds the one CEL environment every expression is checked against.
var envOnce = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable(varInput, cel.ListType(cel.MapType(cel.StringType, cel.DynType))),
		cel.Variable(varContext, cel.MapType(cel.StringType, cel.DynType)),
		// Parameters decode as int when integral and double otherwise, so let
		// `context.input[0].score > 5` compare a double with an int.
		cel.CrossTypeNumericComparisons(true),
		cel.ParserExpressionSizeLimit(MaxExpressionBytes),
		cel.ParserRecursionLimit(64),
		cel.ExpressionNodeLimit(2_000),
		// Constant patterns are checked here; computed ones in meteredMatches.
		cel.ASTValidators(cel.ValidateRegexProgramSizeLimit(regexProgramLimit)),
	)
})

// program is one compiled expression; err is set when it does not type-check.
type program struct {
	usesContext bool
	err         error // message without the path

	env          *cel.Env
	checked      *cel.Ast
	accumulators map[string]bool
	// instances holds planned copies of the program, each wired to its own
	// meter so a metered node reaches its budget by pointer; an evaluation
	// takes one and puts it back. The pool only saves planning time: every
	// instance is planned from the same checked AST and evaluates alike.
	instances sync.Pool // *instance
}

// instance is one planned copy of a program and the meter its nodes charge.
type instance struct {
	prg cel.Program
	m   *meter
}

func (p *program) plan() (*instance, error) {
	m := &meter{}
	// No cel.CostLimit: see meter.go for why the runtime meters evaluation itself.
	// cel-go ranges over its own maps while it plans (and its async calls use
	// channels, which no expression here can reach); the plan evaluates the
	// same on every replay.
	//workflowcheck:ignore
	prg, err := p.env.Program(p.checked, cel.CustomDecoratorV2(newMeterDecorator(m, p.accumulators)))
	if err != nil {
		return nil, err
	}
	return &instance{prg: prg, m: m}, nil
}

// get returns an instance with a fresh budget of limit units.
func (p *program) get(limit uint64) (*instance, error) {
	in, _ := p.instances.Get().(*instance)
	if in == nil {
		var err error
		if in, err = p.plan(); err != nil {
			return nil, err
		}
	}
	*in.m = meter{limit: limit}
	return in, nil
}

func (p *program) put(in *instance) { p.instances.Put(in) }

var (
	cache      sync.Map // expression text -> *program
	cacheCount atomic.Int64
)

// compile returns the compiled form of expr, memoised by its text. The result
// depends only on the text, so the memo is pure.
func compile(expr string) *program {
	if p, ok := cache.Load(expr); ok {
		return p.(*program)
	}
	p := build(expr)
	if cacheCount.Load() < maxCachedPrograms {
		if _, loaded := cache.LoadOrStore(expr, p); !loaded {
			cacheCount.Add(1)
		}
	}
	return p
}

func build(expr string) *program {
	if len(expr) > MaxExpressionBytes {
		return &program{err: fmt.Errorf("%d bytes, more than the %d allowed", len(expr), MaxExpressionBytes)}
	}
	if !utf8.ValidString(expr) {
		return &program{err: fmt.Errorf("not valid UTF-8")}
	}
	env, err := envOnce()
	if err != nil {
		return &program{err: fmt.Errorf("CEL environment: %w", err)}
	}
	// cel-go ranges over its own maps while it checks; the checked program
	// depends on the text alone, and its issues print sorted by position.
	//workflowcheck:ignore
	checked, iss := env.Compile(expr)
	if iss != nil && iss.Err() != nil {
		return &program{err: iss.Err()}
	}
	out := checked.OutputType()
	if !out.IsExactType(cel.BoolType) && !out.IsExactType(cel.DynType) {
		return &program{err: fmt.Errorf("the expression returns %s; it must return bool", out)}
	}
	native := checked.NativeRep()
	if err := checkConstantRegexes(native.Expr()); err != nil {
		return &program{err: err}
	}
	if err := refuseStructs(native.Expr()); err != nil {
		return &program{err: err}
	}
	p := &program{
		usesContext:  readsVar(native.Expr(), varContext),
		env:          env,
		checked:      checked,
		accumulators: accumulators(native.Expr()),
	}
	in, err := p.plan() // surfaces planning errors at check time
	if err != nil {
		return &program{err: err}
	}
	p.put(in)
	return p
}

// refuseStructs refuses message construction (e.g. google.protobuf.Struct{...}):
// guardrails never need it, and a protobuf map iterates in random order.
func refuseStructs(e ast.Expr) error {
	var found ast.Expr
	ast.PreOrderVisit(e, ast.NewExprVisitor(func(x ast.Expr) {
		if found == nil && x.Kind() == ast.StructKind {
			found = x
		}
	}))
	if found != nil {
		return fmt.Errorf("constructing a message (%s{...}) is not supported", found.AsStruct().TypeName())
	}
	return nil
}

// checkConstantRegexes refuses a constant matches() pattern that does not
// compile or is too large, at type-check time rather than on every input.
func checkConstantRegexes(e ast.Expr) error {
	var bad error
	ast.PreOrderVisit(e, ast.NewExprVisitor(func(x ast.Expr) {
		if bad != nil || x.Kind() != ast.CallKind || x.AsCall().FunctionName() != "matches" {
			return
		}
		args := x.AsCall().Args()
		if x.AsCall().IsMemberFunction() {
			args = append([]ast.Expr{x.AsCall().Target()}, args...)
		}
		if len(args) != 2 || args[1].Kind() != ast.LiteralKind {
			return
		}
		pat, ok := args[1].AsLiteral().(types.String)
		if !ok {
			return
		}
		size, err := types.RegexProgramSize(string(pat))
		switch {
		case err != nil:
			bad = fmt.Errorf("matches(): the pattern %q does not compile: %v", string(pat), err)
		case size > regexProgramLimit:
			bad = fmt.Errorf("matches(): the pattern %q compiles to %d instructions, more than the %d allowed", string(pat), size, regexProgramLimit)
		}
	}))
	return bad
}

// readsVar reports whether e reads the top-level variable name, minding
// comprehension variables that shadow it.
func readsVar(e ast.Expr, name string) bool {
	switch e.Kind() {
	case ast.IdentKind:
		return e.AsIdent() == name
	case ast.SelectKind:
		return readsVar(e.AsSelect().Operand(), name)
	case ast.CallKind:
		c := e.AsCall()
		if c.IsMemberFunction() && readsVar(c.Target(), name) {
			return true
		}
		for _, a := range c.Args() {
			if readsVar(a, name) {
				return true
			}
		}
	case ast.ListKind:
		for _, x := range e.AsList().Elements() {
			if readsVar(x, name) {
				return true
			}
		}
	case ast.MapKind:
		for _, en := range e.AsMap().Entries() {
			me := en.AsMapEntry()
			if readsVar(me.Key(), name) || readsVar(me.Value(), name) {
				return true
			}
		}
	case ast.StructKind:
		for _, f := range e.AsStruct().Fields() {
			if readsVar(f.AsStructField().Value(), name) {
				return true
			}
		}
	case ast.ComprehensionKind:
		c := e.AsComprehension()
		if readsVar(c.IterRange(), name) || readsVar(c.AccuInit(), name) {
			return true
		}
		loopShadows := c.IterVar() == name || c.AccuVar() == name || (c.HasIterVar2() && c.IterVar2() == name)
		if !loopShadows && (readsVar(c.LoopCondition(), name) || readsVar(c.LoopStep(), name)) {
			return true
		}
		if c.AccuVar() != name && readsVar(c.Result(), name) {
			return true
		}
	}
	return false
}

// accumulators lists the comprehension accumulator variables of e.
func accumulators(e ast.Expr) map[string]bool {
	names := map[string]bool{}
	ast.PreOrderVisit(e, ast.NewExprVisitor(func(x ast.Expr) {
		if x.Kind() == ast.ComprehensionKind {
			names[x.AsComprehension().AccuVar()] = true
		}
	}))
	return names
}
