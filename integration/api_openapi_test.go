package integration

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"
	"github.com/stretchr/testify/require"
)

// openAPIDoc checks answers against the Tasks API's OpenAPI description:
// the one checked in at internal/tasksapi/openapi.json, which must equal the one the
// API serves.
type openAPIDoc struct {
	doc      map[string]any
	compiler *jsonschema.Compiler
	mu       sync.Mutex
	compiled map[string]*jsonschema.Schema
}

var (
	openAPIOnce sync.Once
	openAPIFile []byte
	openAPIErr  error
)

// checkedInOpenAPI reads the checked-in description and requires the
// served one (GET /openapi.json, no key needed) to be the same.
func checkedInOpenAPI(t *testing.T, url string) *openAPIDoc {
	t.Helper()
	openAPIOnce.Do(func() {
		openAPIFile, openAPIErr = os.ReadFile(filepath.Join("..", "internal", "tasksapi", "openapi.json"))
	})
	require.NoError(t, openAPIErr)
	resp, err := http.Get(url + "/openapi.json")
	require.NoError(t, err)
	defer resp.Body.Close()
	served, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.JSONEq(t, string(openAPIFile), string(served), "the served description differs from internal/tasksapi/openapi.json: run make openapi")
	d := &openAPIDoc{compiler: jsonschema.NewCompiler(), compiled: map[string]*jsonschema.Schema{}}
	require.NoError(t, json.Unmarshal(openAPIFile, &d.doc))
	d.compiler.Draft = jsonschema.Draft2020
	require.NoError(t, d.compiler.AddResource("openapi.json", bytes.NewReader(openAPIFile)))
	return d
}

// check requires the answer's status to be documented for the operation and
// its body to fit the documented schema of its content type.
func (d *openAPIDoc) check(t *testing.T, method, path string, r reply) {
	t.Helper()
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	tmpl, op := d.operation(method, path)
	require.NotNil(t, op, "%s %s is not in the OpenAPI description", method, path)
	responses, _ := op["responses"].(map[string]any)
	status := strconv.Itoa(r.Status)
	resp, ok := responses[status].(map[string]any)
	if !ok {
		resp, ok = responses["default"].(map[string]any)
		status = "default"
	}
	require.True(t, ok, "%s %s answered %d, which its description does not list: %s", method, tmpl, r.Status, r.Raw)
	if len(r.Raw) == 0 {
		require.Nil(t, resp["content"], "%s %s %d: the description promises a body", method, tmpl, r.Status)
		return
	}
	ct := strings.TrimSpace(strings.SplitN(r.Header.Get("Content-Type"), ";", 2)[0])
	content, _ := resp["content"].(map[string]any)
	require.Contains(t, content, ct, "%s %s %d: content type %s is not described", method, tmpl, r.Status, ct)
	ptr := "#/paths/" + escapePointer(tmpl) + "/" + strings.ToLower(method) + "/responses/" + status + "/content/" + escapePointer(ct) + "/schema"
	s := d.schema(t, ptr)
	dec := json.NewDecoder(bytes.NewReader(r.Raw))
	dec.UseNumber() // as the validator expects
	var v any
	require.NoError(t, dec.Decode(&v))
	require.NoError(t, s.Validate(v), "%s %s %d does not fit its description: %s", method, tmpl, r.Status, r.Raw)
}

func (d *openAPIDoc) schema(t *testing.T, ptr string) *jsonschema.Schema {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s, ok := d.compiled[ptr]; ok {
		return s
	}
	s, err := d.compiler.Compile("openapi.json" + ptr)
	require.NoError(t, err, ptr)
	d.compiled[ptr] = s
	return s
}

// operation finds the described operation a concrete path belongs to.
func (d *openAPIDoc) operation(method, path string) (string, map[string]any) {
	paths, _ := d.doc["paths"].(map[string]any)
	for tmpl, item := range paths {
		re := "^" + regexp.MustCompile(`\\{[^}]+\\}`).ReplaceAllString(regexp.QuoteMeta(tmpl), `[^/]+`) + "$"
		if regexp.MustCompile(re).MatchString(path) {
			op, _ := item.(map[string]any)[strings.ToLower(method)].(map[string]any)
			if op != nil {
				return tmpl, op
			}
		}
	}
	return "", nil
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
