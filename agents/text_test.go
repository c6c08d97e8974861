package agents

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/contract"
)

// Text is one part, s whole: text over the inline budget is never split
// (docs/content.md#content-parts), so the input it makes is refused, with
// the limit, the size and what to do, before any child starts.
func TestTextOverTheInlineBudgetIsRefusedNotSplit(t *testing.T) {
	big := strings.Repeat("é", contract.MaxInlineTextBytes/2) + "xyz" // 100,003 bytes
	in := Text(big)
	require.Len(t, in.Message, 1, "one part, as documented")
	require.Equal(t, big, *in.Message[0].Text, "whole")

	args := contract.StartArgs{Agent: contract.AgentSpec{Name: "a", Model: "p/m"}, Mode: contract.ModeSingle, Input: &in}
	chk := checkStart(args, "")
	require.NotNil(t, chk.Refusal, "the oversized text was accepted")
	require.Equal(t, contract.ErrInvalidInput, chk.Refusal.Type)
	for _, want := range []string{fmt.Sprint(len(big)), fmt.Sprint(contract.MaxInlineTextBytes), "mount", "file reference"} {
		require.Contains(t, chk.Refusal.Message, want)
	}

	_, err := TextInput(big)
	var re *RefusedError
	require.True(t, errors.As(err, &re), "%v", err)
	require.Equal(t, contract.ErrInvalidInput, re.Type)
	for _, want := range []string{"100003", "100000", "upload it to the agent's mount"} {
		require.Contains(t, re.Message, want)
	}

	exact := strings.Repeat("a", contract.MaxInlineTextBytes)
	ok, err := TextInput(exact)
	require.NoError(t, err)
	require.Equal(t, Text(exact), ok)
	args.Input = &ok
	require.Nil(t, checkStart(args, "").Refusal, "at the budget is fine")
}
