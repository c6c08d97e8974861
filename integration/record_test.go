package integration

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	historypb "go.temporal.io/api/history/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

// EnvRecordHistories, when set to a folder, makes the integration tests write
// the histories of their tasks there; testdata/histories holds the recorded
// ones that workflows/replay_test.go replays in every `make test`, so a change
// that breaks running tasks fails CI. Record with `make record-histories`.
const EnvRecordHistories = "AGENT_RECORD_HISTORIES"

// recordHistory writes a run's history as JSON (the `temporal workflow show
// --output json` form the SDK's replayer reads) when recording is on.
func recordHistory(t *testing.T, id, runID, name string) {
	t.Helper()
	dir := os.Getenv(EnvRecordHistories)
	if dir == "" {
		return
	}
	h := &historypb.History{Events: history(t, id, runID)}
	b, err := protojson.MarshalOptions{Indent: "  "}.Marshal(h)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, name+".json"), b, 0o644))
	// The workflow ID: code that derives names from it (sub-task IDs) must
	// replay under the same one.
	require.NoError(t, os.WriteFile(filepath.Join(dir, name+".id"), []byte(id), 0o644))
}
