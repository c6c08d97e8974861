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

// Pairs splits a list of "name=value" pairs written with commas or
// whitespace between them (AGENT_MCP_SERVERS, AGENT_A2A_AGENTS).
func Pairs(v string) []string {
	return strings.FieldsFunc(v, func(r rune) bool {
		return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r'
	})
}

// Names keeps the names of one list apart: each listed once, and no two
// whose variables (PREFIX_TOKEN, PREFIX_HEADERS) would be the same ones.
type Names struct {
	list, what string            // the list's variable, and what it lists ("server")
	byPrefix   map[string]string // name by the prefix of its variables
}

// NewNames checks the names of list, each a what.
func NewNames(list, what string) *Names {
	return &Names{list: list, what: what, byPrefix: map[string]string{}}
}

// Add takes name, whose variables start with prefix.
func (n *Names) Add(name, prefix string) error {
	other, clash := n.byPrefix[prefix]
	switch {
	case clash && other == name:
		return fmt.Errorf("%s: %s %q is listed twice; list each %s once", n.list, n.what, name, n.what)
	case clash:
		return fmt.Errorf("%s: %ss %q and %q would both read %sTOKEN and %sHEADERS; rename one so their names differ in more than case and '-' versus '_'", n.list, n.what, other, name, prefix, prefix)
	}
	n.byPrefix[prefix] = name
	return nil
}
