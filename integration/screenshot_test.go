package integration

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// EnvScreenshots names a folder where browser tests also save their
// screenshots (the pictures of docs/getting-started.md come from there);
// unset, they are kept in the test's own temporary folder only.
const EnvScreenshots = "AGENT_SCREENSHOTS"

// shot saves a screenshot of the tab's page as name (a .png): a test
// artifact in the test's folder, and in $AGENT_SCREENSHOTS when set.
func shot(t *testing.T, tab context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(tab, chromedp.FullScreenshot(100)) // 100: PNG
	require.NoError(t, err, "screenshot %s", name)
	require.NotEmpty(t, png)
	dirs := []string{t.TempDir()}
	if d := os.Getenv(EnvScreenshots); d != "" {
		dirs = append(dirs, d)
	}
	for _, d := range dirs {
		require.NoError(t, os.MkdirAll(d, 0o755))
		p := filepath.Join(d, name)
		require.NoError(t, os.WriteFile(p, png, 0o644))
		t.Logf("screenshot %s", p)
	}
}
