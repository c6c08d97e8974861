package devserver

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/server/common/dynamicconfig"
)

// Dynamic-config profiles: named sets of overrides on top of the dev
// server's base overrides (dynamicConfig in config.go). They change how
// fast the one process dispatches work, never what a workflow may hold:
// payload, history-size and continue-as-new limits stay at the server's
// defaults in every profile.
const (
	// ProfileThroughput lifts the rate limits that Temporal sizes for a
	// cluster of many hosts and shards and that, on this one process with
	// one history shard, cap the whole stack at about 20 workflow tasks a
	// second. It is the default of `agentdev run` and `agentdev server`.
	ProfileThroughput = "throughput"
	// ProfileDefault keeps Temporal's defaults (plus the base overrides).
	ProfileDefault = "default"
)

// Setting is one dynamic-config value of a profile.
type Setting struct {
	Key     string `json:"key"`
	Value   any    `json:"value"`
	Default any    `json:"default"` // the server's own default (v1.32)
	Why     string `json:"why"`
}

// profiles lists every profile's settings, in the order docs show them.
// docs/configuration.md and docs/bench.md give the measurements behind each.
var profiles = map[string][]Setting{
	ProfileDefault: nil,
	ProfileThroughput: {
		// Every workflow task not sent straight to matching (all but an
		// update's first) is handed over by the shard's transfer queue. Its
		// reader takes a token before each read of up to 100 tasks; with one
		// shard, 20 tokens a second are the whole server's, so as soon as
		// turns ask for more, each waits for the next 50 ms tick.
		globalInt("history.transferProcessorMaxPollRPS", dynamicconfig.TransferProcessorMaxPollRPS, 1000,
			"the transfer queue, which hands workflow tasks to matching, reads at most this many times a second per shard; with the one shard, 20 makes each workflow task wait for the next 50 ms tick as soon as more are due (one conversation's turn: 50 ms instead of 26 ms)"),
		// An update's workflow task goes straight to matching, which refuses
		// it while 250 tasks wait to be written to the queue's backlog; the
		// task is then lost until its schedule-to-start timeout (5 s).
		taskQueueInt("matching.outstandingTaskAppendsThreshold", dynamicconfig.MatchingOutstandingTaskAppendsThreshold, 10000,
			"tasks a task queue holds while they wait to be written; beyond, matching refuses new ones, and an update's workflow task, sent straight to matching, is lost until it times out (5 s): 1,000 conversations sending at once reach 250"),
		// Concurrency and request budgets sized for a cluster of many hosts.
		namespaceInt("frontend.namespaceCount", dynamicconfig.FrontendMaxConcurrentLongRunningRequestsPerInstance, 10000,
			"concurrent long-running requests per API (polls, queries, and updates waiting for their result, such as `ask`): 1,200 leaves no room beyond 1,000 waiting conversations"),
		globalInt("frontend.rps", dynamicconfig.FrontendRPS, 20000,
			"requests a second the frontend accepts, polls included; a turn costs 6-8"),
		namespaceInt("frontend.namespaceRPS", dynamicconfig.FrontendMaxNamespaceRPSPerInstance, 20000,
			"the same per namespace: everything here is in one"),
		globalInt("history.rps", dynamicconfig.HistoryRPS, 20000,
			"requests a second the history service accepts: every task start and completion, signal, update and query"),
		globalInt("matching.rps", dynamicconfig.MatchingRPS, 20000,
			"requests a second the matching service accepts: every task added and every poll, 4-5 a turn, so 1,200 caps a faster machine near 250 turns a second"),
	},
}

// globalInt, namespaceInt and taskQueueInt take the key as Temporal's docs spell it (the
// server lower-cases keys) and read the default from the server itself.
func globalInt(key string, s dynamicconfig.GlobalIntSetting, v int, why string) Setting {
	checkKey(key, s.Key())
	return Setting{Key: key, Value: v, Default: s.Get(dynamicconfig.NewNoopCollection())(), Why: why}
}

func namespaceInt(key string, s dynamicconfig.NamespaceIntSetting, v int, why string) Setting {
	checkKey(key, s.Key())
	return Setting{Key: key, Value: v, Default: s.Get(dynamicconfig.NewNoopCollection())("default"), Why: why}
}

func taskQueueInt(key string, s dynamicconfig.TaskQueueIntSetting, v int, why string) Setting {
	checkKey(key, s.Key())
	return Setting{Key: key, Value: v, Default: s.Get(dynamicconfig.NewNoopCollection())("default", "", enumspb.TASK_QUEUE_TYPE_WORKFLOW), Why: why}
}

func checkKey(key string, k dynamicconfig.Key) {
	if dynamicconfig.MakeKey(key) != k {
		panic(fmt.Sprintf("devserver: profile key %q is %q in the server", key, k))
	}
}

// ProfileNames lists the profiles.
func ProfileNames() []string {
	names := make([]string, 0, len(profiles))
	for n := range profiles {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Profile returns a profile's settings ("" is ProfileThroughput).
func Profile(name string) ([]Setting, error) {
	if name == "" {
		name = ProfileThroughput
	}
	s, ok := profiles[name]
	if !ok {
		return nil, fmt.Errorf("unknown dynamic-config profile %q (have %s)", name, strings.Join(ProfileNames(), ", "))
	}
	return slices.Clone(s), nil
}

// ParseDynamicConfigValue reads KEY=VALUE as the Temporal CLI's
// --dynamic-config-value does: VALUE is JSON (1000, true, "text"), or a
// plain string when it does not parse.
func ParseDynamicConfigValue(kv string) (string, any, error) {
	k, v, ok := strings.Cut(kv, "=")
	if !ok || strings.TrimSpace(k) == "" {
		return "", nil, fmt.Errorf("dynamic config value %q: want KEY=VALUE", kv)
	}
	var val any
	if err := json.Unmarshal([]byte(v), &val); err != nil {
		val = v
	}
	if f, ok := val.(float64); ok && f == float64(int64(f)) {
		val = int(f) // integer settings refuse float64
	}
	return strings.TrimSpace(k), val, nil
}
