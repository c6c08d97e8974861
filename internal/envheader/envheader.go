// Package envheader reads the HTTP headers a worker sends to a remote
// server the operator lists (an MCP server, an A2A agent) from the
// server's own environment variables, so credentials stay out of URLs,
// task specs and history.
package envheader

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// FromEnv reads <prefix>HEADERS (a JSON object of header names to values)
// and <prefix>TOKEN (sent as "Authorization: Bearer ..."); errors name the
// variable and what to write instead.
func FromEnv(prefix string, getenv func(string) string) (http.Header, error) {
	h := http.Header{}
	if raw := strings.TrimSpace(getenv(prefix + "HEADERS")); raw != "" {
		var values map[string]string
		if err := json.Unmarshal([]byte(raw), &values); err != nil {
			return nil, fmt.Errorf(`%sHEADERS: not a JSON object of header names to string values (%v); e.g. %sHEADERS='{"X-Api-Key": "..."}'`, prefix, err, prefix)
		}
		for name, value := range values {
			if !validName(name) {
				return nil, fmt.Errorf(`%sHEADERS: %q is not a header name (letters, digits and !#$%%&'*+-.^_|~ only), e.g. {"X-Api-Key": "..."}`, prefix, name)
			}
			if strings.ContainsAny(value, "\r\n\x00") {
				return nil, fmt.Errorf("%sHEADERS: the value of %q holds a line break or NUL; give it on one line", prefix, name)
			}
			h.Set(name, value)
		}
	}
	if token := strings.TrimSpace(getenv(prefix + "TOKEN")); token != "" {
		if h.Get("Authorization") != "" {
			return nil, fmt.Errorf("%sTOKEN and an Authorization entry in %sHEADERS are both set; keep one", prefix, prefix)
		}
		if strings.ContainsAny(token, "\r\n\x00") {
			return nil, fmt.Errorf("%sTOKEN holds a line break or NUL; give the bare token on one line", prefix)
		}
		h.Set("Authorization", "Bearer "+token)
	}
	return h, nil
}

// validName reports whether name is an RFC 9110 token.
func validName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_|~`", c) >= 0:
		default:
			return false
		}
	}
	return true
}
