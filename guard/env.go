package guard

import (
	"fmt"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
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
	CostLimit = 1_000_000
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
	prg         cel.Program
	usesContext bool
	err         error // message without the path
}

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
	checked, iss := env.Compile(expr)
	if iss != nil && iss.Err() != nil {
		return &program{err: iss.Err()}
	}
	out := checked.OutputType()
	if !out.IsExactType(cel.BoolType) && !out.IsExactType(cel.DynType) {
		return &program{err: fmt.Errorf("the expression returns %s; it must return bool", out)}
	}
	native := checked.NativeRep()
	if err := refuseStructs(native.Expr()); err != nil {
		return &program{err: err}
	}
	// No cel.CostLimit: see meter.go for why the runtime meters evaluation itself.
	prg, err := env.Program(checked, cel.CustomDecoratorV2(newMeterDecorator(accumulators(native.Expr()))))
	if err != nil {
		return &program{err: err}
	}
	return &program{prg: prg, usesContext: readsVar(native.Expr(), varContext)}
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
