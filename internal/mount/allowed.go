package mount

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"

	"github.com/agenttask/agenttask/contract"
)

// EnvMounts is the operator's list of storage agents may use: a JSON object
// of name to mount URL, e.g. {"files": "s3://bucket?region=eu-west-1",
// "local": "file:///var/lib/agenttask/files"}. Workers read it; so does the
// starter, to check a start and to resolve `upload --mount NAME`.
const EnvMounts = "AGENT_MOUNTS"

// Mounts is that list. Whoever starts a task names a mount from it; a URL
// from a caller is never opened unless it is one of these, so a task cannot
// point the workers' credentials at another bucket, an internal endpoint or
// an arbitrary folder.
type Mounts map[string]string

var mountNameRE = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,63}$`)

// ParseMounts reads an EnvMounts value ("" is no mounts).
func ParseMounts(text string) (Mounts, error) {
	m := Mounts{}
	if strings.TrimSpace(text) == "" {
		return m, nil
	}
	if err := json.Unmarshal([]byte(text), &m); err != nil {
		return nil, fmt.Errorf("%s must be a JSON object of name to mount URL, such as {\"files\": \"file:///var/lib/agenttask/files\"}: %v", EnvMounts, err)
	}
	for name, u := range m {
		if !mountNameRE.MatchString(name) {
			return nil, fmt.Errorf("%s: mount name %q must match [a-z][a-z0-9_-]{0,63}", EnvMounts, name)
		}
		if _, err := parseMountURL(u); err != nil {
			return nil, fmt.Errorf("%s: mount %q: %s", EnvMounts, name, contract.MessageOf(err))
		}
	}
	return m, nil
}

// Names lists the configured names, sorted.
func (m Mounts) Names() []string {
	out := make([]string, 0, len(m))
	//workflowcheck:ignore sorted below
	for n := range m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Resolve is the storage an agent's mount spec names: a configured name, or
// a URL equal to a configured URL (same scheme, bucket or folder and query
// parameters; so tasks started before names existed keep working). Anything
// else is INVALID_INPUT naming path (e.g. "agent.mount").
func (m Mounts) Resolve(path string, s contract.MountSpec) (Spec, error) {
	if err := CheckRoot(s.Root); err != nil {
		return Spec{}, contract.Invalid("%s.root: %s", path, contract.MessageOf(err))
	}
	configured := "none are configured (the operator sets " + EnvMounts + ")"
	if len(m) > 0 {
		configured = "configured: " + strings.Join(m.Names(), ", ")
	}
	switch {
	case s.Name != "" && s.URL != "":
		return Spec{}, contract.Invalid("%s: give \"name\" or \"url\", not both", path)
	case s.Name != "":
		u, ok := m[s.Name]
		if !ok {
			return Spec{}, contract.Invalid("%s.name: %q is not a mount of this deployment (%s)", path, s.Name, configured)
		}
		return Spec{Root: s.Root, URL: u}, nil
	case s.URL != "":
		want, err := canonicalURL(s.URL)
		if err == nil {
			for _, n := range m.Names() { // the same match on every replay when two URLs are equal
				u := m[n]
				if got, err := canonicalURL(u); err == nil && got == want {
					return Spec{Root: s.Root, URL: u}, nil
				}
			}
		}
		return Spec{}, contract.Invalid("%s.url: %q is not one of this deployment's mount URLs; name a configured mount instead, as {\"root\": %q, \"name\": NAME} (%s)", path, redacted(s.URL), s.Root, configured)
	}
	return Spec{}, contract.Invalid("%s: needs \"root\" and the \"name\" of a configured mount (%s)", path, configured)
}

// canonicalURL compares URLs by scheme, host, path and the set of query
// parameters, whatever their order.
func canonicalURL(raw string) (string, error) {
	u, err := parseMountURL(raw)
	if err != nil {
		return "", err
	}
	c := url.URL{Scheme: u.Scheme, Host: u.Host, Path: strings.TrimSuffix(u.Path, "/"), RawQuery: u.Query().Encode()}
	return c.String(), nil
}

// redacted drops a URL's query (it may hold parameters the operator would
// not want repeated in an error).
func redacted(raw string) string {
	if i := strings.IndexByte(raw, '?'); i >= 0 {
		return raw[:i] + "?..."
	}
	return raw
}
