// Package chatui is the chat page of the Tasks API (docs/ui.md),
// served at /ui: plain HTML, CSS and JavaScript embedded in the binary (no
// build step, nothing fetched from elsewhere). The page talks to the API
// only through its public HTTP routes, with the key the person enters
// (kept in the tab's sessionStorage); the page itself needs no key, and
// serving it grants nothing.
package chatui

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

//go:embed static
var static embed.FS

// Prefix is where the page is served.
const Prefix = "/ui/"

// CSP lets the page load only its own files and call only its own origin
// (the API that served it): no inline script, no other host, no framing.
// Images may also be data: URLs (none are made today; kept for inline
// attachments a later API may serve as data).
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Handler serves the page under Prefix; /ui itself redirects to /ui/.
func Handler() http.Handler {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded folder is part of the binary
	}
	files := http.StripPrefix(Prefix, http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, r.Method+" is not served on "+r.URL.Path+" (allowed: GET, HEAD)", http.StatusMethodNotAllowed)
			return
		}
		if r.URL.Path == strings.TrimSuffix(Prefix, "/") {
			http.Redirect(w, r, Prefix, http.StatusMovedPermanently)
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", CSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}
