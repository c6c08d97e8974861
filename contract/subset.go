package contract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// The JSON Schema subset (docs/contract.md#the-schema-subset): exactly these keywords, an object at the
// top. Anything else is refused, so every rule a caller writes is enforced
// rather than half-checked.
var subsetKeywords = map[string]bool{
	"type": true, "properties": true, "required": true, "additionalProperties": true,
	"items": true, "enum": true, "minItems": true, "maxItems": true,
	"description": true, "title": true,
}

var subsetTypes = map[string]bool{
	"object": true, "array": true, "string": true, "number": true,
	"integer": true, "boolean": true, "null": true,
}

// SubsetKeywords lists the accepted keywords, for error messages and docs.
func SubsetKeywords() string {
	ks := make([]string, 0, len(subsetKeywords))
	//workflowcheck:ignore sorted below
	for k := range subsetKeywords {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, ", ")
}

// CheckSubset refuses a schema outside the subset, naming the offending path
// (path is the caller's name for the schema, e.g. "agent.parameters").
func CheckSubset(path string, raw json.RawMessage) error {
	v, err := decodeJSON(raw)
	if err != nil {
		return Invalid("%s: not valid JSON: %v", path, err)
	}
	top, ok := v.(map[string]any)
	if !ok {
		return Invalid("%s: a schema must be a JSON object with \"type\": \"object\"", path)
	}
	if t, _ := top["type"].(string); t != "object" {
		return Invalid("%s: the top of the schema must be {\"type\": \"object\", ...}", path)
	}
	return checkNode(path, top)
}

// checkNode checks one schema node and, through properties and items, the
// nodes under it. The checks run keyword by keyword in a fixed order and the
// first offence is the one reported.
func checkNode(path string, node map[string]any) error {
	if err := checkKeywords(path, node); err != nil {
		return err
	}
	typ, err := checkType(path, node)
	if err != nil {
		return err
	}
	for _, check := range []func(path, typ string, node map[string]any) error{
		checkText, checkProperties, checkRequired, checkAdditionalProperties, checkItems, checkEnum, checkItemBounds,
	} {
		if err := check(path, typ, node); err != nil {
			return err
		}
	}
	return nil
}

// checkKeywords refuses a keyword outside the subset.
func checkKeywords(path string, node map[string]any) error {
	keys := make([]string, 0, len(node))
	//workflowcheck:ignore sorted below
	for k := range node {
		keys = append(keys, k)
	}
	sort.Strings(keys) // deterministic: the first offence by name is reported
	for _, k := range keys {
		if !subsetKeywords[k] {
			return Invalid("%s.%s: keyword %q is outside the supported schema subset (%s)", path, k, k, SubsetKeywords())
		}
	}
	return nil
}

// checkType returns the node's type ("" when it names none), which the
// other keywords are checked against.
func checkType(path string, node map[string]any) (string, error) {
	t, ok := node["type"]
	if !ok {
		return "", nil
	}
	s, isStr := t.(string)
	if !isStr || !subsetTypes[s] {
		return "", Invalid("%s.type: must be one of object, array, string, number, integer, boolean, null (a single string)", path)
	}
	return s, nil
}

// checkText checks description and title.
func checkText(path, _ string, node map[string]any) error {
	for _, k := range []string{"description", "title"} {
		if v, ok := node[k]; ok {
			if _, isStr := v.(string); !isStr {
				return Invalid("%s.%s: must be a string", path, k)
			}
		}
	}
	return nil
}

// checkProperties checks an object's properties and each property's schema.
func checkProperties(path, typ string, node map[string]any) error {
	p, ok := node["properties"]
	if !ok {
		return nil
	}
	props, isObj := p.(map[string]any)
	if !isObj {
		return Invalid("%s.properties: must be an object of property name to schema", path)
	}
	if typ != "object" {
		return Invalid("%s.properties: only allowed with \"type\": \"object\"", path)
	}
	names := make([]string, 0, len(props))
	//workflowcheck:ignore sorted below
	for n := range props {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		child, isObj := props[n].(map[string]any)
		if !isObj {
			return Invalid("%s.properties.%s: must be a schema object", path, n)
		}
		if err := checkNode(path+".properties."+n, child); err != nil {
			return err
		}
	}
	return nil
}

// checkRequired checks that required lists declared properties, once each.
// It runs after checkProperties: properties, when present, is an object.
func checkRequired(path, typ string, node map[string]any) error {
	r, ok := node["required"]
	if !ok {
		return nil
	}
	list, isList := r.([]any)
	if !isList {
		return Invalid("%s.required: must be a list of property names", path)
	}
	if typ != "object" {
		return Invalid("%s.required: only allowed with \"type\": \"object\"", path)
	}
	declared, _ := node["properties"].(map[string]any)
	seen := map[string]bool{}
	for i, e := range list {
		s, isStr := e.(string)
		if !isStr {
			return Invalid("%s.required[%d]: must be a string", path, i)
		}
		if seen[s] {
			return Invalid("%s.required[%d]: %q is listed twice", path, i, s)
		}
		seen[s] = true
		if _, ok := declared[s]; !ok {
			return Invalid("%s.required[%d]: %q is not declared in properties", path, i, s)
		}
	}
	return nil
}

func checkAdditionalProperties(path, typ string, node map[string]any) error {
	a, ok := node["additionalProperties"]
	if !ok {
		return nil
	}
	if _, isBool := a.(bool); !isBool {
		return Invalid("%s.additionalProperties: must be a boolean (schemas are outside the subset)", path)
	}
	if typ != "object" {
		return Invalid("%s.additionalProperties: only allowed with \"type\": \"object\"", path)
	}
	return nil
}

// checkItems checks an array's items schema.
func checkItems(path, typ string, node map[string]any) error {
	it, ok := node["items"]
	if !ok {
		return nil
	}
	child, isObj := it.(map[string]any)
	if !isObj {
		return Invalid("%s.items: must be one schema object (tuple forms are outside the subset)", path)
	}
	if typ != "array" {
		return Invalid("%s.items: only allowed with \"type\": \"array\"", path)
	}
	return checkNode(path+".items", child)
}

func checkEnum(path, _ string, node map[string]any) error {
	if e, ok := node["enum"]; ok {
		list, isList := e.([]any)
		if !isList || len(list) == 0 {
			return Invalid("%s.enum: must be a non-empty list of values", path)
		}
	}
	return nil
}

// checkItemBounds checks minItems and maxItems, and that they agree.
func checkItemBounds(path, typ string, node map[string]any) error {
	bounds := map[string]int64{}
	for _, k := range []string{"minItems", "maxItems"} {
		v, ok := node[k]
		if !ok {
			continue
		}
		n, isNum := v.(json.Number)
		i, err := n.Int64()
		if !isNum || err != nil || i < 0 {
			return Invalid("%s.%s: must be a non-negative integer", path, k)
		}
		if typ != "array" {
			return Invalid("%s.%s: only allowed with \"type\": \"array\"", path, k)
		}
		bounds[k] = i
	}
	if mn, ok := bounds["minItems"]; ok {
		if mx, ok := bounds["maxItems"]; ok && mn > mx {
			return Invalid("%s: minItems (%d) is greater than maxItems (%d)", path, mn, mx)
		}
	}
	return nil
}

// TopProperties returns the property names declared at the top of a subset schema.
func TopProperties(raw json.RawMessage) []string {
	v, err := decodeJSON(raw)
	if err != nil {
		return nil
	}
	top, _ := v.(map[string]any)
	props, _ := top["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	//workflowcheck:ignore sorted below
	for n := range props {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func decodeJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after the JSON value")
	}
	return v, nil
}
