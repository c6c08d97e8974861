package main

import (
	"strings"
	"testing"
)

// The deploy command checks its line before dialing Temporal (the
// integration test rolls a deployment back through it).
func TestDeployCommandUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"deploy"}, "ACTION is missing"},
		{[]string{"deploy", "promote", "b1"}, `unknown action "promote"`},
		{[]string{"deploy", "current"}, "want 1 arguments, got 0"},
		{[]string{"deploy", "describe", "b1"}, "want 0 arguments, got 1"},
		{[]string{"deploy", "ramp", "b1"}, "want 2 arguments, got 1"},
		{[]string{"deploy", "ramp", "b1", "150"}, "from 0 to 100"},
		{[]string{"deploy", "ramp", "b1", "ten"}, "from 0 to 100"},
	} {
		r := runCLI(t, nil, nil, "", tc.args...)
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r.wantError(t, 2, ErrUsage, tc.want)
			if !strings.Contains(r.stderr, "deploy current BUILD_ID") {
				t.Errorf("the usage error does not carry the command's help: %s", r.stderr)
			}
		})
	}
}
