package workflows

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
)

// variables fills {{name}} from the collected values and the caller's
// variables; on a clash of names the caller's win; a secret is passed only
// by name, so its placeholder reads [secret] even when a collected value
// has its name.
func TestCallersVariablesWinAClashWithCollectedNames(t *testing.T) {
	saved := &collectedRecord{Collected: []contract.Collected{
		{Name: "city", Value: json.RawMessage(`"Mombasa-collected"`)},
		{Name: "region", Value: json.RawMessage(`"Coast-collected"`)},
		{Name: "token", Value: json.RawMessage(`"token-collected"`)},
		{Name: "count", Value: json.RawMessage(`3`)},
	}}
	args := &StartArgs{
		StartArgs: contract.StartArgs{Variables: map[string]json.RawMessage{
			"city":  json.RawMessage(`"Nairobi-variable"`),
			"count": json.RawMessage(`{"n":7}`),
			"token": json.RawMessage(`"s3cr3t"`),
			"user":  json.RawMessage(`"Amina"`),
		},
			Secrets: []string{"token"},
		},
	}
	vars, secrets := saved.variables(args)
	require.Equal(t, map[string]string{
		"city":   "Nairobi-variable", // the caller's, over the collected value
		"count":  `{"n":7}`,          // the caller's, as JSON text
		"region": "Coast-collected",  // collected, no clash
		"user":   "Amina",
	}, vars, "no secret's value, and no collected value under a secret's name")
	require.Equal(t, []string{"token"}, secrets)
	filled := activities.FillInstructions("{{user}} in {{city}} ({{region}}), {{count}}, key {{token}}", vars, secrets)
	require.Equal(t, `Amina in Nairobi-variable (Coast-collected), {"n":7}, key [secret]`, filled)

	// Whatever order the collected values came in (a later one moves to
	// the end), the caller's variable still wins.
	saved.collect("city", json.RawMessage(`"Kisumu-exposed"`))
	vars, _ = saved.variables(args)
	require.Equal(t, "Nairobi-variable", vars["city"])

	// Without variables, the collected values fill on their own.
	args = &StartArgs{}
	vars, secrets = saved.variables(args)
	require.Equal(t, "Kisumu-exposed", vars["city"])
	require.Equal(t, "token-collected", vars["token"])
	require.Empty(t, secrets)
	saved.Collected = nil
	vars, _ = saved.variables(args)
	require.Nil(t, vars, "nothing to fill")
}
