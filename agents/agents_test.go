package agents

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/agenttask/agenttask/contract"
)

func TestChildIDStaysWithinTheBound(t *testing.T) {
	require.Equal(t, "order-7.triage.abc", childID("order-7", "triage", "abc"))
	long := childID(strings.Repeat("p", 300), "triage", "abcdefgh")
	require.Len(t, long, 255)
	require.True(t, strings.HasSuffix(long, ".triage.abcdefgh"))
}

func TestCheckStart(t *testing.T) {
	good := contract.StartArgs{Agent: contract.AgentSpec{Name: "a", Model: "p/m"}, Mode: contract.ModeSingle}
	chk := checkStart(good, "")
	require.Nil(t, chk.Refusal)
	require.Len(t, chk.Suffix, 8)
	require.NotEqual(t, chk.Suffix, checkStart(good, "").Suffix, "drawn anew")

	require.Empty(t, checkStart(good, "given").Suffix)
	require.Equal(t, contract.ErrInvalidInput, checkStart(good, "has space").Refusal.Type)
	bad := good
	bad.Agent.Name = "Bad Name"
	require.Equal(t, contract.ErrInvalidInput, checkStart(bad, "").Refusal.Type)
	streamed := good
	streamed.Stream = true
	require.Contains(t, checkStart(streamed, "").Refusal.Message, "WithTaskID")
	require.Nil(t, checkStart(streamed, "ok_id-1").Refusal)
}

func TestTypedErrors(t *testing.T) {
	var re *RefusedError
	require.True(t, errors.As(typed("t", temporal.NewNonRetryableApplicationError("no", contract.ErrInvalidInput, nil)), &re))
	require.Equal(t, contract.ErrInvalidInput, re.Type)

	var te *TaskError
	details := json.RawMessage(`{"violations":["/team"]}`)
	require.True(t, errors.As(typed("t", temporal.NewNonRetryableApplicationError("unfit", contract.ErrOutputUnfit, nil, details)), &te))
	require.Equal(t, contract.ErrOutputUnfit, te.Type)
	require.JSONEq(t, string(details), string(te.Details))

	require.True(t, errors.As(typed("t", temporal.NewCanceledError()), &te))
	require.Equal(t, "TASK_CANCELED", te.Type)

	plain := errors.New("other")
	require.Same(t, plain, typed("t", plain))
}

func TestDecode(t *testing.T) {
	r := &Result{TaskID: "t", Output: `{"team":"billing"}`, Shaped: true}
	var v struct{ Team string }
	require.NoError(t, r.Decode(&v))
	require.Equal(t, "billing", v.Team)
	var s string
	require.NoError(t, (&Answer{Text: "hello"}).Decode(&s))
	require.Equal(t, "hello", s)
	require.ErrorContains(t, (&Answer{Text: "not json"}).Decode(&v), "does not decode")
	require.ErrorContains(t, (&Result{}).Decode(&v), "no output")
}
