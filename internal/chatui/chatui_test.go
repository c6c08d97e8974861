package chatui

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func get(t *testing.T, method, path string) *http.Response {
	t.Helper()
	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return rec.Result()
}

// The page and its files are served with a policy that lets them load and
// call only their own origin; /ui redirects to /ui/.
func TestHandlerServesThePage(t *testing.T) {
	r := get(t, http.MethodGet, "/ui/")
	require.Equal(t, http.StatusOK, r.StatusCode)
	require.Equal(t, "text/html; charset=utf-8", r.Header.Get("Content-Type"))
	require.Equal(t, CSP, r.Header.Get("Content-Security-Policy"))
	require.Equal(t, "nosniff", r.Header.Get("X-Content-Type-Options"))
	require.Equal(t, "DENY", r.Header.Get("X-Frame-Options"))
	body, _ := io.ReadAll(r.Body)
	require.Contains(t, string(body), `<script src="app.js" defer></script>`)
	require.NotContains(t, string(body), "<script>", "no inline script: the policy would block it")
	require.NotContains(t, string(body), "http", "nothing loaded from another host")

	for path, ctype := range map[string]string{"/ui/app.js": "text/javascript; charset=utf-8", "/ui/app.css": "text/css; charset=utf-8"} {
		r := get(t, http.MethodGet, path)
		require.Equal(t, http.StatusOK, r.StatusCode, path)
		require.Equal(t, ctype, r.Header.Get("Content-Type"), path)
		require.Equal(t, CSP, r.Header.Get("Content-Security-Policy"), path)
	}
	js, _ := io.ReadAll(get(t, http.MethodGet, "/ui/app.js").Body)
	require.Contains(t, string(js), "sessionStorage", "the key is kept in the tab")
	require.NotContains(t, string(js), "localStorage", "the key is never kept beyond the tab")

	r = get(t, http.MethodGet, "/ui")
	require.Equal(t, http.StatusMovedPermanently, r.StatusCode)
	require.Equal(t, "/ui/", r.Header.Get("Location"))

	require.Equal(t, http.StatusNotFound, get(t, http.MethodGet, "/ui/nothing.js").StatusCode)
	r = get(t, http.MethodPost, "/ui/")
	require.Equal(t, http.StatusMethodNotAllowed, r.StatusCode)
	require.Equal(t, "GET, HEAD", r.Header.Get("Allow"))
	require.True(t, strings.HasPrefix(CSP, "default-src 'none'"))
}
