package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/transcript"
)

// Saved values by reference (rulesLargeState). A value the model saves with
// the built-in save, or an exposes key of an output, over InlineValueBytes
// is stored whole in the task's stash by the ModelTurn activity that
// produced it, under a content-addressed name (value-<sha256 hex>). The
// activity returns a reference in its place: a save call's arguments hold a
// cut preview and the reference, an output's references are beside it
// (ModelTurnResult.ValueRefs). So neither the activity's result, nor the
// workflow's state, nor its result holds the whole value. The Shape activity
// reads the values back (ShapeInput.Stash).
const (
	// MaxSavedValueBytes bounds one saved value, serialised as compact JSON:
	// a larger save is refused to the model.
	MaxSavedValueBytes = contract.MaxSavedValueBytes
	// InlineValueBytes is the largest value held inline in the workflow's
	// state (the workflow's maxSavedBytes).
	InlineValueBytes = 2_000
	// PreviewChars is the length of the cut preview held in place of a value
	// by reference (its last character is "…").
	PreviewChars = 1_000
	// ShapeRecordsBytes bounds the saved values the shaping pass is shown,
	// as JSON (the workflow's maxRecordsChars): the oldest are left out.
	ShapeRecordsBytes = 60_000

	valueStashPrefix = contract.ValueStashPrefix
)

// ValueRef names a saved value stored whole in the task's stash (the contract's type).
type ValueRef = contract.ValueRef

// LargeValues, in a ModelTurnInput, asks the call to store large saved
// values by reference. Prints mask the task's secrets in what is stored
// (the activity never has their values).
type LargeValues struct {
	Prints []SecretPrint `json:"prints,omitempty"`
}

// SecretPrint identifies one form of a secret's value: its length, a
// rolling hash and its SHA-256 (the workflow's secretPrint).
type SecretPrint struct {
	Len  int    `json:"len"`
	Roll uint64 `json:"roll"`
	Sum  string `json:"sum"`
}

// Keys of a save call's arguments as the activity rewrites them: the
// reference of a value kept by reference (its "value" is then the preview),
// or the size of a value too large to save (its "value" is left out).
const (
	SaveArgRef   = "value_ref"
	SaveArgBytes = "value_bytes"
)

// Preview is what a value by reference holds inline: its text (a string's
// content, anything else as JSON text), cut to PreviewChars characters
// ending in "…", as a JSON string.
func Preview(v json.RawMessage) json.RawMessage {
	s := string(v)
	var str string
	if json.Unmarshal(v, &str) == nil {
		s = str
	}
	if utf8.RuneCountInString(s) > PreviewChars {
		r := []rune(s)
		s = string(r[:PreviewChars-1]) + "…"
	}
	b, _ := json.Marshal(s)
	return b
}

// storeLargeValues stores the large saved values of a model call's result
// and puts references in their place (in.LargeValues set). Names are
// content-addressed and written once, so a retried call writes nothing new.
func (a *Activities) storeLargeValues(ctx context.Context, in ModelTurnInput, res *ModelTurnResult) error {
	prints := in.LargeValues.Prints
	if in.Builtins {
		for i, tc := range res.ToolCalls {
			if tc.Name != BuiltinSave {
				continue
			}
			args, err := a.saveArgs(ctx, in.Transcript, tc.Arguments, prints)
			if err != nil {
				return err
			}
			res.ToolCalls[i].Arguments = args
		}
	}
	for k, v := range res.Output.Values {
		if len(v) <= InlineValueBytes {
			continue
		}
		ref, err := a.putValue(ctx, in.Transcript, maskValue(v, prints))
		if err != nil {
			return err
		}
		if res.ValueRefs == nil {
			res.ValueRefs = map[string]ValueRef{}
		}
		res.ValueRefs[k] = ref
	}
	return nil
}

// saveArgs rewrites a save call's arguments: a value over InlineValueBytes
// is stored and replaced by its preview and reference; one over
// MaxSavedValueBytes by its size alone (the workflow refuses it). Keys the
// activity writes are removed from what the model sent, so a reference the
// workflow sees was always made here.
func (a *Activities) saveArgs(ctx context.Context, k TranscriptKey, args string, prints []SecretPrint) (string, error) {
	return rewriteSaveArgs(args, prints, func(data []byte) (ValueRef, error) { return a.putValue(ctx, k, data) })
}

// rewriteSaveArgs is saveArgs with store keeping a value and naming its
// reference (toolargs.go measures a save as it will be returned with a
// store that keeps nothing).
func rewriteSaveArgs(args string, prints []SecretPrint, store func([]byte) (ValueRef, error)) (string, error) {
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(args), &m) != nil || m == nil {
		return args, nil // the workflow answers with the usage
	}
	_, hadRef := m[SaveArgRef]
	_, hadBytes := m[SaveArgBytes]
	delete(m, SaveArgRef)
	delete(m, SaveArgBytes)
	changed := hadRef || hadBytes
	if v := m["value"]; len(v) > InlineValueBytes {
		changed = true
		masked := maskValue(v, prints)
		data, err := json.Marshal(masked)
		if err != nil { // cannot happen: v was decoded from JSON
			data = masked
		}
		if len(data) > MaxSavedValueBytes {
			delete(m, "value")
			m[SaveArgBytes], _ = json.Marshal(len(data))
		} else {
			ref, err := store(data)
			if err != nil {
				return "", err
			}
			m["value"] = Preview(data)
			m[SaveArgRef], _ = json.Marshal(ref)
		}
	}
	if !changed {
		return args, nil
	}
	b, _ := json.Marshal(m)
	return string(b), nil
}

// putValue stores a value once under its content-addressed name.
func (a *Activities) putValue(ctx context.Context, k TranscriptKey, v json.RawMessage) (ValueRef, error) {
	data, err := json.Marshal(v) // compact: what is stored, counted and summed
	if err != nil {
		data = v
	}
	sum := sha256.Sum256(data)
	ref := ValueRef{Stash: valueStashPrefix + hex.EncodeToString(sum[:]), Bytes: len(data), SHA256: hex.EncodeToString(sum[:])}
	var stored json.RawMessage
	if _, err := a.Transcript.PutOnce(ctx, k, ref.Stash, json.RawMessage(data), &stored); err != nil {
		return ref, storageError("storing a saved value", err)
	}
	return ref, nil
}

// getValue reads a value by reference and checks it. A value that is gone
// or does not match reports ok false (the caller keeps the preview); other
// failures are storage errors, retried.
func (a *Activities) getValue(ctx context.Context, k TranscriptKey, ref ValueRef) (json.RawMessage, bool, error) {
	var v json.RawMessage
	if err := a.Transcript.GetOnce(ctx, k, ref.Stash, &v); err != nil {
		if errors.Is(err, transcript.ErrNotFound) {
			return nil, false, nil
		}
		return nil, false, storageError("reading a saved value", err)
	}
	sum := sha256.Sum256(v)
	if len(v) != ref.Bytes || hex.EncodeToString(sum[:]) != ref.SHA256 {
		return nil, false, nil
	}
	return v, true, nil
}

// savedRecord is one saved value as the workflow hands it to the shaping
// pass: inline, or a preview and its reference.
type savedRecord struct {
	Name  string          `json:"name"`
	Value json.RawMessage `json:"value"`
	Ref   *ValueRef       `json:"ref,omitempty"`
}

// resolveRecords replaces each value by reference in records (a JSON list
// of {"name", "value", "ref"?}) with the whole value read from the stash,
// then leaves out the oldest until the list fits ShapeRecordsBytes.
func (a *Activities) resolveRecords(ctx context.Context, k TranscriptKey, records string) (string, error) {
	var list []savedRecord
	if err := json.Unmarshal([]byte(records), &list); err != nil {
		return records, nil // not a list this runtime wrote: shown as given
	}
	for i, r := range list {
		if r.Ref == nil {
			continue
		}
		v, ok, err := a.getValue(ctx, k, *r.Ref)
		if err != nil {
			return "", err
		}
		if ok {
			list[i].Value = v
		} else {
			activity.GetLogger(ctx).Warn("a saved value by reference is gone or changed; the shaping pass gets its preview",
				"name", r.Name, "stash", r.Ref.Stash)
		}
		list[i].Ref = nil
	}
	for {
		b, _ := json.Marshal(list)
		if len(b) <= ShapeRecordsBytes || len(list) == 0 {
			return string(b), nil
		}
		list = list[1:]
	}
}

// maskValue masks secrets inside a JSON value's strings and keys, as the
// workflow's maskJSON does, by their prints.
func maskValue(raw json.RawMessage, prints []SecretPrint) json.RawMessage {
	if len(prints) == 0 {
		return raw
	}
	return MaskJSON(raw, func(s string) string { return MaskPrints(s, prints) })
}

// MaskJSON applies mask to every string and key of a JSON value, whatever
// escaping it was written with: the value is decoded (numbers kept as
// written), masked and encoded again. Text that is not JSON is masked
// whole and returned as a JSON string.
func MaskJSON(raw json.RawMessage, mask func(string) string) json.RawMessage {
	d := json.NewDecoder(strings.NewReader(string(raw)))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		out, _ := json.Marshal(mask(string(raw)))
		return out
	}
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case string:
			return mask(x)
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
		case map[string]any:
			keys := make([]string, 0, len(x))
			//workflowcheck:ignore sorted below
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys) // two keys that mask alike keep the same value on every replay
			out := make(map[string]any, len(x))
			for _, k := range keys {
				out[mask(k)] = walk(x[k])
			}
			return out
		}
		return v
	}
	out, _ := json.Marshal(walk(v))
	return out
}

const rollBase = 1_000_003

// PrintOf is the print of one form of a secret's value: its length, a
// rolling hash and its SHA-256; the value is not recoverable from it.
func PrintOf(v string) SecretPrint {
	return SecretPrint{Len: len(v), Roll: rollHash(v), Sum: sumHex(v)}
}

func rollHash(b string) uint64 {
	var h uint64
	for i := 0; i < len(b); i++ {
		h = h*rollBase + uint64(b[i])
	}
	return h
}

func sumHex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// MaskPrints replaces with "[secret]" every window of s that a print
// identifies (the same rule as the workflow's maskPrints).
func MaskPrints(s string, prints []SecretPrint) string {
	for _, p := range prints {
		if p.Len == 0 || p.Len > len(s) {
			continue
		}
		var pow uint64 = 1 // rollBase^(Len-1)
		for i := 1; i < p.Len; i++ {
			pow *= rollBase
		}
		var b strings.Builder
		h, last := rollHash(s[:p.Len]), 0
		for i := 0; i+p.Len <= len(s); {
			if h == p.Roll && sumHex(s[i:i+p.Len]) == p.Sum {
				b.WriteString(s[last:i])
				b.WriteString("[secret]")
				last, i = i+p.Len, i+p.Len
				if i+p.Len <= len(s) {
					h = rollHash(s[i : i+p.Len])
				}
				continue
			}
			if i+p.Len < len(s) {
				h = (h-uint64(s[i])*pow)*rollBase + uint64(s[i+p.Len])
			}
			i++
		}
		if last > 0 {
			b.WriteString(s[last:])
			s = b.String()
		}
	}
	return s
}

// StoreValueName is the activity that keeps one collected value whole in
// the task's stash (rulesCollectedRefs): a capability's result or a start
// argument's collected value over InlineValueBytes, or a value a rescued or
// resumed task copies from the earlier task's stash.
const StoreValueName = "StoreValue"

// StoreValueInput names the value to keep under the task's Transcript:
// Value (compact JSON, secrets already masked by the workflow), or the
// value From's stash holds under Ref.
type StoreValueInput struct {
	Transcript TranscriptKey   `json:"transcript"`
	Value      json.RawMessage `json:"value,omitempty"`
	From       *TranscriptKey  `json:"from,omitempty"`
	Ref        *ValueRef       `json:"ref,omitempty"`
}

// StoreValueResult is the stored value's reference; Stored is false when
// From no longer holds a value matching Ref (the caller keeps the preview).
type StoreValueResult struct {
	Ref    ValueRef `json:"ref"`
	Stored bool     `json:"stored"`
}

// StoreValue stores a value once under its content-addressed name, so a
// retried attempt writes nothing new. An unavailable store is retried.
func (a *Activities) StoreValue(ctx context.Context, in StoreValueInput) (StoreValueResult, error) {
	v := in.Value
	if in.From != nil {
		if in.Ref == nil || !in.Ref.Valid() {
			return StoreValueResult{}, temporal.NewNonRetryableApplicationError("StoreValue: from needs the value's ref", contract.ErrInvalidInput, nil)
		}
		got, ok, err := a.getValue(ctx, *in.From, *in.Ref)
		if err != nil || !ok {
			return StoreValueResult{}, err
		}
		v = got
	}
	if len(v) == 0 || len(v) > MaxSavedValueBytes || !json.Valid(v) {
		return StoreValueResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("StoreValue: a JSON value of at most %d bytes (got %d bytes)", MaxSavedValueBytes, len(v)), contract.ErrInvalidInput, nil)
	}
	ref, err := a.putValue(ctx, in.Transcript, v)
	if err != nil {
		return StoreValueResult{}, err
	}
	return StoreValueResult{Ref: ref, Stored: true}, nil
}
