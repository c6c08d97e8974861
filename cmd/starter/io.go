package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agenttask/agenttask/contract"
)

// readJSON reads a flag's JSON: inline when it starts with "{" (or "["),
// stdin for "-", and otherwise the file it names.
func (x *cli) readJSON(flagName, v string) ([]byte, error) {
	t := strings.TrimSpace(v)
	switch {
	case t == "":
		return nil, contract.Invalid("%s: empty; give inline JSON, a file name, or - for stdin", flagName)
	case t[0] == '{' || t[0] == '[':
		return []byte(t), nil
	case t == "-":
		b, err := io.ReadAll(x.stdin)
		if err != nil {
			return nil, fmt.Errorf("%s: reading stdin: %w", flagName, err)
		}
		return b, nil
	}
	b, err := os.ReadFile(v)
	if errors.Is(err, os.ErrNotExist) {
		return nil, contract.Invalid("%s: %q is neither inline JSON (which starts with \"{\") nor an existing file", flagName, v)
	}
	if err != nil {
		return nil, contract.Invalid("%s: %v", flagName, err)
	}
	return b, nil
}

func (x *cli) readTaskIO(flagName, v string) (contract.TaskIO, error) {
	var in contract.TaskIO
	data, err := x.readJSON(flagName, v)
	if err != nil {
		return in, err
	}
	if err := decodeStrict(data, &in); err != nil {
		return in, contract.Invalid("%s: not a TaskIO such as {\"message\": [{\"mimeType\": \"text/plain\", \"text\": \"Hello\"}]}: %v", flagName, err)
	}
	return in, nil
}

// decodeStrict decodes one JSON value, refusing unknown fields and trailing data.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("unexpected data after the JSON value")
	}
	return nil
}

func textInput(s string) contract.TaskIO {
	return contract.TaskIO{Message: []contract.ContentPart{contract.TextPart(s)}}
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// writeError writes {"error": {"type": ..., "message": ...}} on one line.
func writeError(w io.Writer, typ, msg string) {
	var e struct {
		Error contract.Error `json:"error"`
	}
	e.Error = contract.Error{Type: typ, Message: msg}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(e)
}

// writeErrorDetails prints an error with its details:
// {"error": {"type", "message", "details"}}.
func writeErrorDetails(w io.Writer, typ, msg string, details any) {
	var e struct {
		Error struct {
			contract.Error
			Details any `json:"details"`
		} `json:"error"`
	}
	e.Error.Error = contract.Error{Type: typ, Message: msg}
	e.Error.Details = details
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(e)
}
