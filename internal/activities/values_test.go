package activities_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
	"github.com/agenttask/agenttask/internal/llm"
	"github.com/agenttask/agenttask/internal/testmodel"
)

func valuesAgent() contract.AgentSpec {
	return contract.AgentSpec{Name: "a", Model: "test/m", MaxTokens: 50}
}

func goEntry() activities.Entries {
	return activities.Entries{Write: []activities.PositionedEntry{input(0, "go", "2026-01-01T00:00:00.000000Z")}}
}

// A save over InlineValueBytes is stored whole in the stash and comes back
// as a preview and a reference; one over MaxSavedValueBytes as its size
// alone; an exposes value over InlineValueBytes as a reference beside the
// output, which keeps it whole. Keys the model sends in the activity's name
// are dropped. Without LargeValues nothing changes.
func TestLargeSavedValuesGoByReference(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	big := strings.Repeat("b", 20_000)
	huge := strings.Repeat("h", 300_000)
	bigArgs, _ := json.Marshal(map[string]any{"name": "big", "value": map[string]string{"text": big}})
	hugeArgs, _ := json.Marshal(map[string]any{"name": "huge", "value": huge})
	forged := `{"name":"small","value":"ok","value_ref":{"stash":"x","bytes":3,"sha256":"y"}}`
	r.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		return testmodel.Reply{ToolCalls: []testmodel.ToolCall{
			{ID: "1", Name: "save", Arguments: string(bigArgs)},
			{ID: "2", Name: "save", Arguments: string(hugeArgs)},
			{ID: "3", Name: "save", Arguments: forged},
		}}
	})
	in := activities.ModelTurnInput{TurnContext: &activities.TurnContext{Agent: valuesAgent(), Builtins: true, LargeValues: &activities.LargeValues{}}, Turn: 1, Entries: goEntry(),
		End: 1}
	res, err := r.turn(t, in)
	require.NoError(t, err)
	require.Len(t, res.ToolCalls, 3)

	var saved struct {
		Name  string               `json:"name"`
		Value json.RawMessage      `json:"value"`
		Ref   *activities.ValueRef `json:"value_ref"`
		Bytes int                  `json:"value_bytes"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.ToolCalls[0].Arguments), &saved))
	require.Less(t, len(res.ToolCalls[0].Arguments), 4_000, "the result holds a preview, not the value")
	require.NotNil(t, saved.Ref)
	require.True(t, saved.Ref.Valid())
	whole, _ := json.Marshal(map[string]string{"text": big})
	sum := sha256.Sum256(whole)
	require.Equal(t, activities.ValueRef{Stash: "value-" + hex.EncodeToString(sum[:]), Bytes: len(whole), SHA256: hex.EncodeToString(sum[:])}, *saved.Ref)
	var preview string
	require.NoError(t, json.Unmarshal(saved.Value, &preview))
	require.Len(t, []rune(preview), activities.PreviewChars)
	require.True(t, strings.HasSuffix(preview, "…"), "marked as cut")
	var stored json.RawMessage
	require.NoError(t, r.tr.GetOnce(ctx, r.key, saved.Ref.Stash, &stored))
	require.JSONEq(t, string(whole), string(stored), "the stash holds the whole value")

	require.Equal(t, `{"name":"huge","value_bytes":300002}`, res.ToolCalls[1].Arguments, "too large: its size alone")
	require.Equal(t, `{"name":"small","value":"ok"}`, res.ToolCalls[2].Arguments, "a reference the model wrote is dropped")

	// An output's exposes values: a reference beside the output, which stays whole.
	spec := valuesAgent()
	spec.Exposes = json.RawMessage(`{"type":"object","properties":{"report":{"type":"string"},"n":{"type":"integer"}}}`)
	report := strings.Repeat("r", 10_000)
	answer, _ := json.Marshal(map[string]any{"message": "done", "report": report, "n": 3})
	r.model.SetHandler(func(c testmodel.Call) testmodel.Reply { return testmodel.Reply{Text: string(answer)} })
	in = activities.ModelTurnInput{TurnContext: &activities.TurnContext{Agent: spec, LargeValues: &activities.LargeValues{}}, Turn: 2, End: 1}
	res, err = r.turn(t, in)
	require.NoError(t, err)
	require.Len(t, res.ValueRefs, 1)
	ref := res.ValueRefs["report"]
	require.Equal(t, len(report)+2, ref.Bytes)
	require.NoError(t, r.tr.GetOnce(ctx, r.key, ref.Stash, &stored))
	require.Equal(t, `"`+report+`"`, string(stored))
	require.Equal(t, `"`+report+`"`, string(res.Output.Values["report"]), "the output keeps its values")

	// Older rules: no LargeValues, nothing stored.
	in.Turn, in.LargeValues = 3, nil
	res, err = r.turn(t, in)
	require.NoError(t, err)
	require.Empty(t, res.ValueRefs)
}

// The shaping pass reads values by reference whole, then leaves out the
// oldest past ShapeRecordsBytes.
func TestShapeReadsValuesByReference(t *testing.T) {
	r := newRig(t)
	acts := &activities.Activities{
		Models:     llm.NewRouter(llm.RouterOptions{Endpoints: map[string]llm.Endpoint{"test": {BaseURL: r.model.URL}}}),
		Transcript: r.tr,
	}
	r.env.RegisterActivity(acts.Shape)
	big := strings.Repeat("w", 20_000)
	r.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		if len(c.Tools) > 0 {
			return testmodel.Reply{ToolCalls: []testmodel.ToolCall{{ID: "1", Name: "save", Arguments: `{"name":"w","value":"` + big + `"}`}}}
		}
		return testmodel.Reply{Text: `{"ok":true}`}
	})
	res, err := r.turn(t, activities.ModelTurnInput{TurnContext: &activities.TurnContext{Agent: valuesAgent(), Builtins: true, LargeValues: &activities.LargeValues{}}, Turn: 1, End: 1, Entries: goEntry()})
	require.NoError(t, err)
	var saved struct {
		Value json.RawMessage     `json:"value"`
		Ref   activities.ValueRef `json:"value_ref"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.ToolCalls[0].Arguments), &saved))

	old := strings.Repeat("o", 45_000) // inline, oldest: left out once the whole value is read
	records, _ := json.Marshal([]map[string]any{
		{"name": "old", "value": old},
		{"name": "small", "value": "kept"},
		{"name": "w", "value": saved.Value, "ref": saved.Ref},
	})
	key := r.key
	v, err := r.env.ExecuteActivity(acts.Shape, activities.ShapeInput{Model: "test/m", Goal: "g", Instructions: "i", Records: string(records), Attempt: 1, Stash: &key})
	require.NoError(t, err)
	var sr activities.ShapeResult
	require.NoError(t, v.Get(&sr))
	calls := r.model.Calls()
	user := calls[len(calls)-1].Messages[1].Content
	require.Contains(t, user, big, "the whole value")
	require.NotContains(t, user, "…")
	require.NotContains(t, user, `"ref"`)
	require.NotContains(t, user, old[:100], "the oldest is left out past the budget")
	require.Contains(t, user, `"kept"`)
}

// Secrets are masked by their prints in what is stored.
func TestLargeValuesAreMaskedByPrints(t *testing.T) {
	secret := "s3cr3t-value"
	sum := sha256.Sum256([]byte(secret))
	var roll uint64
	for i := 0; i < len(secret); i++ {
		roll = roll*1_000_003 + uint64(secret[i])
	}
	prints := []activities.SecretPrint{{Len: len(secret), Roll: roll, Sum: hex.EncodeToString(sum[:])}}
	require.Equal(t, "key [secret] and [secret]!", activities.MaskPrints("key s3cr3t-value and s3cr3t-value!", prints))

	r := newRig(t)
	ctx := context.Background()
	args, _ := json.Marshal(map[string]any{"name": "log", "value": strings.Repeat("x", 3_000) + " token=" + secret})
	r.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		return testmodel.Reply{ToolCalls: []testmodel.ToolCall{{ID: "1", Name: "save", Arguments: string(args)}}}
	})
	res, err := r.turn(t, activities.ModelTurnInput{TurnContext: &activities.TurnContext{Agent: valuesAgent(), Builtins: true, LargeValues: &activities.LargeValues{Prints: prints}}, Turn: 1, End: 1, Entries: goEntry()})
	require.NoError(t, err)
	var saved struct {
		Ref activities.ValueRef `json:"value_ref"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.ToolCalls[0].Arguments), &saved))
	var stored string
	require.NoError(t, r.tr.GetOnce(ctx, r.key, saved.Ref.Stash, &stored))
	require.True(t, strings.HasSuffix(stored, "token=[secret]"), stored[len(stored)-40:])
}

// StoreValue keeps a value once under its content-addressed name, copies a
// value from another task's stash (checked against its reference), and
// reports a copy that is gone or does not match as not stored.
func TestStoreValueStoresAndCopies(t *testing.T) {
	r := newRig(t)
	acts := &activities.Activities{Transcript: r.tr}
	r.env.RegisterActivity(acts.StoreValue)
	store := func(in activities.StoreValueInput) (activities.StoreValueResult, error) {
		v, err := r.env.ExecuteActivity(acts.StoreValue, in)
		if err != nil {
			return activities.StoreValueResult{}, err
		}
		var res activities.StoreValueResult
		require.NoError(t, v.Get(&res))
		return res, nil
	}
	whole, _ := json.Marshal(strings.Repeat("v", 10_000))
	res, err := store(activities.StoreValueInput{Transcript: r.key, Value: whole})
	require.NoError(t, err)
	require.True(t, res.Stored)
	sum := sha256.Sum256(whole)
	require.Equal(t, activities.ValueRef{Stash: "value-" + hex.EncodeToString(sum[:]), Bytes: len(whole), SHA256: hex.EncodeToString(sum[:])}, res.Ref)
	require.True(t, res.Ref.Valid())

	// Copied into another task's stash, where it reads back whole.
	other := activities.TranscriptKey{TaskID: "t2", FirstRunID: "r2"}
	ref := res.Ref
	copied, err := store(activities.StoreValueInput{Transcript: other, From: &r.key, Ref: &ref})
	require.NoError(t, err)
	require.True(t, copied.Stored)
	require.Equal(t, res.Ref, copied.Ref)
	back, err := store(activities.StoreValueInput{Transcript: activities.TranscriptKey{TaskID: "t3", FirstRunID: "r3"}, From: &other, Ref: &ref})
	require.NoError(t, err)
	require.True(t, back.Stored, "the copy is there, whole")

	// Gone, or not what the reference says: not stored.
	missing := ref
	sum = sha256.Sum256([]byte(`"elsewhere"`))
	missing.SHA256, missing.Stash = hex.EncodeToString(sum[:]), "value-"+hex.EncodeToString(sum[:])
	gone, err := store(activities.StoreValueInput{Transcript: other, From: &r.key, Ref: &missing})
	require.NoError(t, err)
	require.False(t, gone.Stored)
	wrong := ref
	wrong.Bytes++
	mismatch, err := store(activities.StoreValueInput{Transcript: other, From: &r.key, Ref: &wrong})
	require.NoError(t, err)
	require.False(t, mismatch.Stored)

	// A copy without a valid reference, or an empty or oversized value, is refused.
	_, err = store(activities.StoreValueInput{Transcript: other, From: &r.key})
	require.ErrorContains(t, err, "ref")
	_, err = store(activities.StoreValueInput{Transcript: other})
	require.ErrorContains(t, err, "at most")
	huge, _ := json.Marshal(strings.Repeat("h", activities.MaxSavedValueBytes))
	_, err = store(activities.StoreValueInput{Transcript: other, Value: huge})
	require.ErrorContains(t, err, "at most")
}

// A shaping request over the output model's context fails the pass at once
// (MODEL_ERROR, not retryable): the same request can never fit, so waiting
// it out as an outage for modelRetryTimeout would only delay the failure.
func TestShapeOverTheOutputModelsContextFailsAtOnce(t *testing.T) {
	r := newRig(t)
	acts := &activities.Activities{
		Models:     llm.NewRouter(llm.RouterOptions{Endpoints: map[string]llm.Endpoint{"test": {BaseURL: r.model.URL}}}),
		Transcript: r.tr,
	}
	r.env.RegisterActivity(acts.Shape)
	r.model.SetContextLimit(10)
	key := r.key
	_, err := r.env.ExecuteActivity(acts.Shape, activities.ShapeInput{Model: "test/m", Goal: "g", Instructions: "i", Records: `[{"name":"a","value":"` + strings.Repeat("v", 2_000) + `"}]`, Attempt: 1, Stash: &key})
	var ae *temporal.ApplicationError
	require.True(t, errors.As(err, &ae), "%v", err)
	require.Equal(t, contract.ErrModel, ae.Type())
	require.True(t, ae.NonRetryable())
	require.Contains(t, ae.Message(), "the shaping request is longer than the output model's context")
	require.Equal(t, 1, r.model.CallCount(), "one request, no retry")
}
