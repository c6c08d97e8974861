package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// CheckArguments checks a call's JSON arguments against a tool's input
// schema; it returns the violations as "path: message", sorted and
// deduplicated so that the same arguments always read alike, nil when they
// fit. Arguments that are not a JSON object are a violation; so is a schema
// that does not compile (the model cannot fix that, but it learns why the
// tool is out of reach).
//
// santhosh-tekuri/jsonschema (which contract already uses) reports every
// violation with its path, where google/jsonschema-go stops at the first.
func CheckArguments(schema, args json.RawMessage) []string {
	var obj map[string]any
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	if err := dec.Decode(&obj); err != nil || obj == nil || dec.More() {
		return []string{"/: the arguments must be one JSON object, e.g. {}"}
	}
	s, err := compileSchema(schema)
	if err != nil {
		return []string{"/: the tool's input schema does not compile, so no arguments can be checked: " + err.Error()}
	}
	// The validator ranges over maps; the violations are sorted below, so
	// what comes back does not depend on its order.
	//workflowcheck:ignore
	err = s.Validate(obj)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []string{"/: " + err.Error()}
	}
	seen := map[string]bool{}
	var out []string
	for _, e := range ve.BasicOutput().Errors {
		if e.Error == "" || strings.HasPrefix(e.Error, "doesn't validate with") {
			continue // an umbrella entry; its causes carry the detail
		}
		path := e.InstanceLocation
		if path == "" {
			path = "/"
		}
		v := path + ": " + e.Error
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		out = append(out, "/: "+ve.Error())
	}
	sort.Strings(out)
	return out
}

// schemas memoises compiled input schemas by their bytes: a tool's schema
// is checked on every call. Bounded by count; a miss compiles again.
var schemas = struct {
	sync.Mutex
	m map[string]*jsonschema.Schema
}{m: map[string]*jsonschema.Schema{}}

const maxCachedSchemas = 1024

// errRemoteRef refuses every $ref outside the schema: a server's schema
// must not make the worker read its files or fetch URLs.
var errRemoteRef = errors.New("a $ref outside the schema is not followed; inline it")

func compileSchema(raw json.RawMessage) (*jsonschema.Schema, error) {
	key := string(raw)
	schemas.Lock()
	s, ok := schemas.m[key]
	schemas.Unlock()
	if ok {
		return s, nil
	}
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020 // unless the schema's $schema says otherwise
	c.LoadURL = func(string) (io.ReadCloser, error) { return nil, errRemoteRef }
	if err := c.AddResource("mem://input-schema.json", bytes.NewReader(raw)); err != nil {
		return nil, fmt.Errorf("not a JSON Schema: %v", err)
	}
	// The compiler ranges over maps while it builds; the schema validates
	// alike whatever the order.
	//workflowcheck:ignore
	s, err := c.Compile("mem://input-schema.json")
	if err != nil {
		return nil, err
	}
	schemas.Lock()
	if len(schemas.m) >= maxCachedSchemas {
		clear(schemas.m)
	}
	schemas.m[key] = s
	schemas.Unlock()
	return s, nil
}
