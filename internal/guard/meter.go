package guard

import (
	"fmt"
	"regexp"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"
)

// The evaluation meter.
//
// cel-go's own cost tracker (cel.CostLimit) keeps a value stack that grows
// with every comprehension iteration and is searched linearly on each
// attribute access, so its overhead is quadratic in a loop's length: with it,
// `context.input.exists(x, ...)` over 10,000 inputs runs 30-60 times slower,
// and a hostile expression at a limit of 1,000,000 ran 0.6 s (10 s under the
// race detector) before being stopped. Temporal flags a workflow goroutine
// that does not yield for a second, so the runtime meters evaluation itself:
// a decorator wraps every planned node and charges a per-evaluation budget.
//
// Charges, in units (one unit is roughly one node execution):
//   - every node executed: 1; an attribute also 1 per qualifier
//     (a.b[0].c); a list or map literal also 1 per element;
//   - every call argument: its size — a string or bytes 1 per 32 bytes, a
//     list or map 1 per element — and, for ==, != and in, its deep size
//     (every nested element and string), since those compare deeply;
//     the comprehension accumulator is exempt (appending to it is O(1));
//   - matches(): 1 per subject byte times (2 + regex program size / 8),
//     plus the pattern's length (it is compiled per call).
//
// The charges depend only on the expression and the values, so they, and the
// point where an evaluation stops, are deterministic.

// regexProgramLimit caps a regex's compiled program (instructions), for
// constant patterns at type-check time and for computed ones at evaluation.
const regexProgramLimit = 1_000

type meter struct {
	used, limit uint64
}

// errCostLimit is the evaluation error of an expression that ran out of budget.
func errCostLimit(limit uint64) interpreter.EvalCancelledError {
	return interpreter.EvalCancelledError{
		Cause:   interpreter.CostLimitExceeded,
		Message: fmt.Sprintf("evaluation exceeded the cost limit of %d (the expression does too much work: simplify it or iterate over less)", limit),
	}
}

// charge spends n units and aborts the evaluation when the budget is spent.
// The panic is the interpreter's own cancellation, which cel.Program.Eval
// turns into the returned error; nothing inside CEL can absorb it.
func (m *meter) charge(n uint64) {
	m.used += n
	if m.used > m.limit {
		panic(errCostLimit(m.limit))
	}
}

// argCharge says how a node's value is charged when a call consumes it.
type argCharge uint8

const (
	argFree    argCharge = iota // not a call argument, or O(1) to consume (size(), type())
	argShallow                  // strings by length, lists and maps by element count
	argDeep                     // every nested element: equality and membership compare deeply
)

// metered is implemented by every wrapper the meter decorator creates.
type metered interface {
	setArgCharge(argCharge)
	isAccumulator() bool
}

func (c argCharge) units(v ref.Val) uint64 {
	switch c {
	case argShallow:
		return shallowSize(v)
	case argDeep:
		return deepSize(v)
	}
	return 0
}

func shallowSize(v ref.Val) uint64 {
	switch x := v.(type) {
	case types.String:
		return uint64(len(x)) / 32
	case types.Bytes:
		return uint64(len(x)) / 32
	case traits.Lister:
		if n, ok := x.Size().(types.Int); ok && n > 0 {
			return uint64(n)
		}
	case traits.Mapper:
		if n, ok := x.Size().(types.Int); ok && n > 0 {
			return uint64(n)
		}
	}
	return 0
}

// deepSize counts every nested element and every 32 bytes of string; values
// built by jsonValue carry it precomputed.
func deepSize(v ref.Val) uint64 {
	switch x := v.(type) {
	case *sizedList:
		return x.deepSize()
	case *lazyMap:
		return x.get().deepSize()
	case *orderedMap:
		return x.deepSize()
	case types.String, types.Bytes:
		return 1 + shallowSize(v)
	case traits.Lister:
		var n uint64 = 1
		it := x.Iterator()
		for it.HasNext() == types.True {
			n += deepSize(it.Next())
		}
		return n
	case traits.Mapper:
		var n uint64 = 1
		it := x.Iterator()
		for it.HasNext() == types.True {
			k := it.Next()
			n += deepSize(k)
			if val, ok := x.Find(k); ok {
				n += deepSize(val)
			}
		}
		return n
	}
	return 1
}

// newMeterDecorator returns the decorator for one planned program instance,
// charging m; accumulators are the comprehension accumulator names found in
// its AST. An instance is used by one evaluation at a time (see instance).
func newMeterDecorator(m *meter, accumulators map[string]bool) interpreter.InterpretableDecoratorV2 {
	return func(i interpreter.InterpretableV2) (interpreter.InterpretableV2, error) {
		if _, done := i.(metered); done {
			return i, nil // a select chain returns its (already wrapped) operand
		}
		switch x := i.(type) {
		case interpreter.InterpretableConst:
			return &meteredConst{InterpretableConst: x, m: m}, nil
		case interpreter.InterpretableAttribute:
			return &meteredAttr{InterpretableAttribute: x, m: m, accum: isAccumulatorAttr(x, accumulators)}, nil
		case interpreter.InterpretableConstructor:
			return &meteredConstructor{InterpretableConstructor: x, m: m, isMap: x.Type() == types.MapType}, nil
		case interpreter.InterpretableCall:
			args := x.Args()
			charges := make([]argCharge, len(args))
			for k := range args {
				charges[k] = argShallow
			}
			switch x.Function() {
			case "size", "type", "dyn", "!_", "-_", "@not_strictly_false", "_?_:_":
				for k := range charges {
					charges[k] = argFree
				}
			case "_==_", "_!=_":
				for k := range charges {
					charges[k] = argDeep
				}
			case "@in":
				if len(charges) == 2 {
					charges[0] = argDeep
					charges[1] = argDeep // a list is searched element by element
				}
			case "matches":
				if len(args) == 2 {
					// metered in meteredMatches itself
					return &meteredMatches{InterpretableCall: x, m: m}, nil
				}
			}
			for k, a := range args {
				if m, ok := a.(metered); ok && !m.isAccumulator() {
					m.setArgCharge(charges[k])
				}
			}
			return &meteredNode{InterpretableV2: x, m: m}, nil
		}
		return &meteredNode{InterpretableV2: i, m: m}, nil
	}
}

func isAccumulatorAttr(a interpreter.InterpretableAttribute, accumulators map[string]bool) bool {
	na, ok := a.Attr().(interpreter.NamespacedAttribute)
	if !ok || len(na.Qualifiers()) > 0 {
		return false
	}
	for _, n := range na.CandidateVariableNames() {
		if accumulators[n] {
			return true
		}
	}
	return false
}

// meteredNode wraps any node (calls, logical operators, comprehensions).
type meteredNode struct {
	interpreter.InterpretableV2
	m   *meter
	arg argCharge
}

func (n *meteredNode) setArgCharge(c argCharge) { n.arg = c }
func (n *meteredNode) isAccumulator() bool      { return false }

func (n *meteredNode) Exec(f *interpreter.ExecutionFrame) ref.Val {
	m := n.m
	m.charge(1)
	v := n.InterpretableV2.Exec(f)
	if n.arg != argFree {
		m.charge(n.arg.units(v))
	}
	return v
}

func (n *meteredNode) Eval(a interpreter.Activation) ref.Val { return n.Exec(interpreter.AsFrame(a)) }

// meteredConst stays an InterpretableConst so the planner still folds
// constant qualifiers (i[0]) and arguments.
type meteredConst struct {
	interpreter.InterpretableConst
	m   *meter
	arg argCharge
}

func (n *meteredConst) setArgCharge(c argCharge) { n.arg = c }
func (n *meteredConst) isAccumulator() bool      { return false }

func (n *meteredConst) Exec(f *interpreter.ExecutionFrame) ref.Val {
	m := n.m
	v := n.InterpretableConst.Exec(f)
	m.charge(1 + n.arg.units(v))
	return v
}

func (n *meteredConst) Eval(a interpreter.Activation) ref.Val { return n.Exec(interpreter.AsFrame(a)) }

// meteredAttr stays an InterpretableAttribute: the planner extends a select
// chain (a.b.c) by adding qualifiers to its operand, which it finds by that
// interface. It counts them to charge each.
type meteredAttr struct {
	interpreter.InterpretableAttribute
	m     *meter
	quals uint64
	arg   argCharge
	accum bool
}

func (n *meteredAttr) setArgCharge(c argCharge) { n.arg = c }
func (n *meteredAttr) isAccumulator() bool      { return n.accum }

func (n *meteredAttr) AddQualifier(q interpreter.Qualifier) (interpreter.Attribute, error) {
	n.quals++
	n.accum = false
	return n.InterpretableAttribute.AddQualifier(q)
}

func (n *meteredAttr) Exec(f *interpreter.ExecutionFrame) ref.Val {
	m := n.m
	m.charge(1 + n.quals)
	v := n.InterpretableAttribute.Exec(f)
	if n.arg != argFree && !n.accum {
		m.charge(n.arg.units(v))
	}
	return v
}

func (n *meteredAttr) Eval(a interpreter.Activation) ref.Val { return n.Exec(interpreter.AsFrame(a)) }

// meteredConstructor charges a list or map literal per element and makes a
// map literal iterate in sorted key order (cel-go backs it with a Go map,
// whose order is random).
type meteredConstructor struct {
	interpreter.InterpretableConstructor
	m     *meter
	isMap bool
	arg   argCharge
}

func (n *meteredConstructor) setArgCharge(c argCharge) { n.arg = c }
func (n *meteredConstructor) isAccumulator() bool      { return false }

func (n *meteredConstructor) Exec(f *interpreter.ExecutionFrame) ref.Val {
	m := n.m
	m.charge(1 + uint64(len(n.InterpretableConstructor.InitVals())))
	v := n.InterpretableConstructor.Exec(f)
	if n.isMap {
		if mp, ok := v.(traits.Mapper); ok {
			v = orderMapper(mp)
		}
	}
	if n.arg != argFree {
		m.charge(n.arg.units(v))
	}
	return v
}

func (n *meteredConstructor) Eval(a interpreter.Activation) ref.Val {
	return n.Exec(interpreter.AsFrame(a))
}

// meteredMatches evaluates matches(subject, pattern) itself so it can charge
// by both sizes before running the regex.
type meteredMatches struct {
	interpreter.InterpretableCall
	m   *meter
	arg argCharge
}

func (n *meteredMatches) setArgCharge(c argCharge) { n.arg = c }
func (n *meteredMatches) isAccumulator() bool      { return false }

func (n *meteredMatches) Exec(f *interpreter.ExecutionFrame) ref.Val {
	m := n.m
	m.charge(1)
	args := n.InterpretableCall.Args()
	subj := args[0].Exec(f)
	if types.IsUnknownOrError(subj) {
		return subj
	}
	pat := args[1].Exec(f)
	if types.IsUnknownOrError(pat) {
		return pat
	}
	s, ok1 := subj.(types.String)
	p, ok2 := pat.(types.String)
	if !ok1 || !ok2 {
		return types.NewErrWithNodeID(n.ID(), "no such overload: matches(%s, %s)", subj.Type().TypeName(), pat.Type().TypeName())
	}
	m.charge(1 + uint64(len(p))) // compiling
	size, err := types.RegexProgramSize(string(p))
	if err != nil {
		return types.NewErrWithNodeID(n.ID(), "%v", err)
	}
	if size > regexProgramLimit {
		return types.NewErrWithNodeID(n.ID(), "regex program size %d exceeds the limit of %d", size, regexProgramLimit)
	}
	m.charge((1 + uint64(len(s))) * (2 + uint64(size)/8))
	ok, err := regexp.MatchString(string(p), string(s))
	if err != nil {
		return types.NewErrWithNodeID(n.ID(), "%v", err)
	}
	return types.Bool(ok)
}

func (n *meteredMatches) Eval(a interpreter.Activation) ref.Val {
	return n.Exec(interpreter.AsFrame(a))
}
