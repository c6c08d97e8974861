package workflows

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/contract"
)

func TestSecretPrintsMaskWithoutTheValue(t *testing.T) {
	args := StartArgs{StartArgs: contract.StartArgs{Secrets: []string{"key", "pin"}, Variables: map[string]json.RawMessage{
		"key": json.RawMessage(`"sk-live-7f3a\"9c"`), "pin": json.RawMessage(`"1234"`), "user": json.RawMessage(`"Amina"`)},
	}}
	prints := printsOf(args)
	require.Len(t, prints, 3, "the key as text and escaped, the pin")
	b, _ := json.Marshal(prints)
	require.NotContains(t, string(b), "sk-live", "a print does not hold the value")

	cases := map[string]string{
		`result: sk-live-7f3a"9c, twice sk-live-7f3a"9c`: `result: [secret], twice [secret]`,
		`{"token":"sk-live-7f3a\"9c"}`:                   `{"token":"[secret]"}`,
		`pin 1234 and 12345 and 91234`:                   `pin [secret] and [secret]5 and 9[secret]`,
		`nothing here`:                                   `nothing here`,
		`12`:                                             `12`,
		`sk-live-7f3a"9`:                                 `sk-live-7f3a"9`,
	}
	for in, want := range cases {
		require.Equal(t, want, maskPrints(in, prints), in)
	}
}
