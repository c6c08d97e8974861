package workflows

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
)

// The changelog turns every behaviour on exactly once: gen1's rules have
// none, each version adds some and keeps every earlier one, the newest has
// them all.
func TestChangelogTurnsEveryBehaviourOnOnce(t *testing.T) {
	require.Equal(t, rules{}, rulesFor(rulesGen1), "gen1 follows none")
	on := func(r rules) map[string]bool {
		out := map[string]bool{}
		v := reflect.ValueOf(r)
		for i := 0; i < v.NumField(); i++ {
			if v.Field(i).Bool() {
				out[v.Type().Field(i).Name] = true
			}
		}
		return out
	}
	seen := map[string]bool{}
	previous := rulesGen1 // DefaultVersion (-1); the gated versions count from 1
	for v := rulesOutages; v <= rulesLatest; previous, v = v, v+1 {
		now, before := on(rulesFor(v)), on(rulesFor(previous))
		require.Greater(t, len(now), len(before), "version %d turns something on", v)
		for name := range before {
			require.True(t, now[name], "version %d keeps %s", v, name)
		}
		for name := range now {
			seen[name] = true
		}
	}
	require.Len(t, seen, reflect.TypeOf(rules{}).NumField(), "every behaviour belongs to a version")
	require.Equal(t, rulesFor(rulesLatest), latestRules)
}
