package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// runNode runs integration/DIR's run.mjs under node with args, the npm
// package pkg installed there by make test-deps (npm ci from DIR's
// lockfile), and decodes what it printed into out.
func runNode(t *testing.T, dir, pkg string, out any, args ...string) {
	t.Helper()
	abs, err := filepath.Abs(dir)
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(abs, "node_modules", filepath.FromSlash(pkg)))
	require.NoError(t, err, "%s is not installed: make test-deps runs npm ci in integration/%s", pkg, dir)
	cmd := exec.CommandContext(ctxT(t, 3*time.Minute), "node", append([]string{"run.mjs"}, args...)...)
	cmd.Dir = abs
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	require.NoError(t, err, "node run.mjs in integration/%s: %s", dir, stderr.String())
	require.NoError(t, json.Unmarshal(stdout, out), "%s", stdout)
}
