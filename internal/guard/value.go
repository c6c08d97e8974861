package guard

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"

	"github.com/agenttask/agenttask/contract"
)

// partsValue builds `i`: one map per part holding the fields the part's JSON
// encoding has (mimeType, text, file, sizeBytes, metadata). Absent fields are
// absent keys, so has(i[0].file) is false for a text part.
func partsValue(parts []contract.ContentPart) (ref.Val, error) {
	elems := make([]ref.Val, len(parts))
	for k, p := range parts {
		v, err := partValue(p)
		if err != nil {
			return nil, fmt.Errorf("part %d: %w", k, err)
		}
		elems[k] = v
	}
	return newSizedList(elems), nil
}

// partValue builds the value encoding/json would produce from the part's
// JSON (see TestValuesMatchJSON) without the round trip.
func partValue(p contract.ContentPart) (ref.Val, error) {
	m := make(map[string]ref.Val, 5)
	m["mimeType"] = jsonString(p.MimeType)
	if p.Text != nil {
		m["text"] = jsonString(*p.Text)
	}
	if p.File != nil {
		m["file"] = jsonString(*p.File)
	}
	if p.SizeBytes != nil {
		m["sizeBytes"] = types.Int(*p.SizeBytes)
	}
	if len(p.Metadata) > 0 {
		v, err := jsonValue(p.Metadata)
		if err != nil {
			return nil, fmt.Errorf("metadata: %w", err)
		}
		m["metadata"] = v
	}
	return newOrderedMap(m), nil
}

// taskIOValue builds the value of one TaskIO's flat JSON object (message,
// received_at, committed_at, dynamic keys), as contract.TaskIO.MarshalJSON writes it.
func taskIOValue(t contract.TaskIO) (*orderedMap, error) {
	m := make(map[string]ref.Val, 3+len(t.Values))
	msg, err := partsValue(t.Message)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", contract.KeyMessage, err)
	}
	m[contract.KeyMessage] = msg
	if t.ReceivedAt != "" {
		m[contract.KeyReceivedAt] = jsonString(t.ReceivedAt)
	}
	if t.CommittedAt != "" {
		m[contract.KeyCommittedAt] = jsonString(t.CommittedAt)
	}
	for _, k := range sortedKeys(t.Values) {
		raw := t.Values[k]
		if contract.IsWellKnownKey(k) {
			continue // MarshalJSON leaves them out too
		}
		if len(raw) == 0 {
			m[k] = types.NullValue // a nil json.RawMessage encodes as null
			continue
		}
		v, err := jsonValue(raw)
		if err != nil {
			return nil, fmt.Errorf("key %q: %w", k, err)
		}
		m[jsonKey(k)] = v
	}
	return newOrderedMap(m), nil
}

// contextValue builds `context`: {"input": [...], "output": [...]}. Entries
// are converted on first access, so reading context.input[0] from a long
// task converts one entry, not the whole history.
func contextValue(ctx Context) ref.Val {
	list := func(name string, ios []contract.TaskIO) ref.Val {
		lazies := make([]lazyMap, len(ios))
		elems := make([]ref.Val, len(ios))
		for k := range ios {
			lazies[k] = lazyMap{src: &ios[k], list: name, index: k}
			elems[k] = &lazies[k]
		}
		return newSizedList(elems)
	}
	return newOrderedMap(map[string]ref.Val{"input": list("input", ctx.Input), "output": list("output", ctx.Output)})
}

// jsonString is s as a JSON round trip yields it: encoding/json replaces each
// byte of invalid UTF-8 with U+FFFD.
func jsonString(s string) types.String {
	if utf8.ValidString(s) {
		return types.String(s)
	}
	return types.String(validUTF8(s))
}

func jsonKey(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return validUTF8(s)
}

func validUTF8(s string) string {
	var b strings.Builder
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		if r == utf8.RuneError && n == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[:n])
		}
		s = s[n:]
	}
	return b.String()
}

// jsonValue decodes one JSON document into CEL values: integral numbers become
// int (double when they do not fit), objects become maps with sorted keys.
func jsonValue(b []byte) (ref.Val, error) {
	if v, ok := simpleJSON(b); ok {
		return v, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the JSON value")
	}
	return toVal(v)
}

// simpleJSON decodes the common scalar forms (small integers, plain strings,
// true, false, null) without a decoder; anything else reports false.
func simpleJSON(b []byte) (ref.Val, bool) {
	switch string(b) {
	case "true":
		return types.True, true
	case "false":
		return types.False, true
	case "null":
		return types.NullValue, true
	}
	if len(b) >= 2 && b[0] == '"' && b[len(b)-1] == '"' {
		body := b[1 : len(b)-1]
		for _, c := range body {
			if c < 0x20 || c == '"' || c == '\\' {
				return nil, false
			}
		}
		if !utf8.Valid(body) {
			return nil, false
		}
		return types.String(body), true
	}
	digits := b
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 18 || (digits[0] == '0' && len(digits) > 1) {
		return nil, false
	}
	var n int64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return nil, false
		}
		n = n*10 + int64(c-'0')
	}
	if b[0] == '-' {
		n = -n
	}
	return types.Int(n), true
}

func toVal(v any) (ref.Val, error) {
	switch x := v.(type) {
	case nil:
		return types.NullValue, nil
	case bool:
		return types.Bool(x), nil
	case string:
		return types.String(x), nil
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return types.Int(n), nil
		}
		f, err := x.Float64()
		if err != nil {
			return nil, fmt.Errorf("number %s: %w", x, err)
		}
		return types.Double(f), nil
	case []any:
		elems := make([]ref.Val, len(x))
		for k, e := range x {
			ev, err := toVal(e)
			if err != nil {
				return nil, err
			}
			elems[k] = ev
		}
		return newSizedList(elems), nil
	case map[string]any:
		names := sortedKeys(x) // the first error is the same on every replay
		m := make(map[string]ref.Val, len(x))
		for _, k := range names {
			ev, err := toVal(x[k])
			if err != nil {
				return nil, err
			}
			m[k] = ev
		}
		return orderedMapOf(m, names), nil
	}
	return nil, fmt.Errorf("unexpected JSON value %T", v)
}

// orderedMap is a CEL map whose keys iterate in sorted order. cel-go iterates
// its own maps in Go map order, which is random; comprehensions over a map
// (m.all(k, ...), m.map(k, k)) must give the same result and the same error
// on every workflow replay.
type orderedMap struct {
	traits.Mapper
	keys []ref.Val
	deep uint64 // deepSize memo; 0: not computed yet (see sizedList on locking)
}

func newOrderedMap(m map[string]ref.Val) *orderedMap { return orderedMapOf(m, sortedKeys(m)) }

// orderedMapOf is newOrderedMap given m's keys, sorted.
func orderedMapOf(m map[string]ref.Val, names []string) *orderedMap {
	native := make(map[string]any, len(m))
	keys := make([]ref.Val, len(names))
	for k, n := range names {
		native[n] = m[n] // NativeToValue returns a ref.Val unchanged
		keys[k] = types.String(n)
	}
	return &orderedMap{Mapper: types.NewStringInterfaceMap(types.DefaultTypeAdapter, native), keys: keys}
}

// sortedKeys lists m's keys in sorted order. The values here are built in
// workflow code, so a loop over a map that can stop at an error, or in which
// jsonKey folds two keys into one, walks these instead of Go's random order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	//workflowcheck:ignore the keys are sorted before use
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// orderMapper wraps any CEL map so that it iterates in sorted key order.
func orderMapper(m traits.Mapper) ref.Val {
	if _, ok := m.(*orderedMap); ok {
		return m
	}
	var keys []ref.Val
	it := m.Iterator()
	for it.HasNext() == types.True {
		keys = append(keys, it.Next())
	}
	sortKeys(keys)
	return &orderedMap{Mapper: m, keys: keys}
}

// sizedList is a list the runtime built; it remembers its deep size for the
// meter once computed. Like every value here it belongs to one evaluation
// call, so the memo needs no lock.
type sizedList struct {
	traits.Lister
	elems []ref.Val
	deep  uint64 // 0: not computed yet
}

func newSizedList(elems []ref.Val) *sizedList {
	return &sizedList{Lister: types.NewRefValList(types.DefaultTypeAdapter, elems), elems: elems}
}

func (l *sizedList) deepSize() uint64 {
	if l.deep == 0 {
		var n uint64 = 1
		for _, e := range l.elems {
			n += deepSize(e)
		}
		l.deep = n
	}
	return l.deep
}

// lazyMap is a TaskIO entry of `context`, converted on first use. A
// conversion error (a dynamic value that is not valid JSON) aborts the
// evaluation with that error, so no expression can pass over a broken entry.
type lazyMap struct {
	src   *contract.TaskIO
	list  string // "input" or "output"
	index int
	m     *orderedMap
}

func (l *lazyMap) get() *orderedMap {
	if l.m == nil {
		m, err := taskIOValue(*l.src)
		if err != nil {
			panic(interpreter.EvalCancelledError{Message: fmt.Sprintf("context.%s[%d] cannot be read: %v", l.list, l.index, err)})
		}
		l.m = m
	}
	return l.m
}

func (l *lazyMap) ConvertToNative(t reflect.Type) (any, error) { return l.get().ConvertToNative(t) }
func (l *lazyMap) ConvertToType(t ref.Type) ref.Val            { return l.get().ConvertToType(t) }
func (l *lazyMap) Equal(o ref.Val) ref.Val                     { return l.get().Equal(o) }
func (l *lazyMap) Type() ref.Type                              { return types.MapType }
func (l *lazyMap) Value() any                                  { return l.get().Value() }
func (l *lazyMap) Contains(k ref.Val) ref.Val                  { return l.get().Contains(k) }
func (l *lazyMap) Get(k ref.Val) ref.Val                       { return l.get().Get(k) }
func (l *lazyMap) Find(k ref.Val) (ref.Val, bool)              { return l.get().Find(k) }
func (l *lazyMap) Size() ref.Val                               { return l.get().Size() }
func (l *lazyMap) Iterator() traits.Iterator                   { return l.get().Iterator() }

func (m *orderedMap) deepSize() uint64 {
	if m.deep == 0 {
		var n uint64 = 1
		for _, k := range m.keys {
			n += deepSize(k)
			if v, ok := m.Find(k); ok {
				n += deepSize(v)
			}
		}
		m.deep = n
	}
	return m.deep
}

// Iterator walks the keys in sorted order.
func (m *orderedMap) Iterator() traits.Iterator { return &keyIterator{keys: m.keys} }

// sortKeys orders map keys (bool, int, uint or string) by type, then value.
func sortKeys(keys []ref.Val) {
	rank := func(v ref.Val) int {
		switch v.(type) {
		case types.Bool:
			return 0
		case types.Int:
			return 1
		case types.Uint:
			return 2
		case types.String:
			return 3
		}
		return 4
	}
	sort.SliceStable(keys, func(a, b int) bool {
		ka, kb := keys[a], keys[b]
		ra, rb := rank(ka), rank(kb)
		if ra != rb {
			return ra < rb
		}
		switch x := ka.(type) {
		case types.Bool:
			return !bool(x) && bool(kb.(types.Bool))
		case types.Int:
			return x < kb.(types.Int)
		case types.Uint:
			return x < kb.(types.Uint)
		case types.String:
			return x < kb.(types.String)
		}
		return strings.Compare(fmt.Sprint(ka.Value()), fmt.Sprint(kb.Value())) < 0
	})
}

// keyIterator is a traits.Iterator over a fixed key slice.
type keyIterator struct {
	keys []ref.Val
	next int
}

func (it *keyIterator) HasNext() ref.Val { return types.Bool(it.next < len(it.keys)) }

func (it *keyIterator) Next() ref.Val {
	if it.next >= len(it.keys) {
		return nil
	}
	k := it.keys[it.next]
	it.next++
	return k
}

func (it *keyIterator) ConvertToNative(reflect.Type) (any, error) {
	return nil, errors.New("an iterator has no native form")
}

func (it *keyIterator) ConvertToType(ref.Type) ref.Val {
	return types.NewErr("an iterator cannot be converted")
}

func (it *keyIterator) Equal(ref.Val) ref.Val { return types.False }
func (it *keyIterator) Type() ref.Type        { return types.IteratorType }
func (it *keyIterator) Value() any            { return nil }
