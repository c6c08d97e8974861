package taskdef

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// MaxPromptBytes bounds a prompt version's text.
const MaxPromptBytes = 100_000

// placeholder is exactly {{name}}: no spaces inside the braces, so text such
// as "{{ name }}" or "{{Name}}" stays literal and a prompt never grows a
// variable its author did not mean.
var placeholder = regexp.MustCompile(`\{\{([a-z][a-z0-9_]{0,63})\}\}`)

// PromptVariables returns the distinct placeholder names of text in order of
// first appearance (never nil, so it shows as [] in JSON).
func PromptVariables(text string) []string {
	names := []string{}
	seen := map[string]bool{}
	for _, m := range placeholder.FindAllStringSubmatch(text, -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			names = append(names, m[1])
		}
	}
	return names
}

// CheckPromptText refuses a prompt text that is blank, over MaxPromptBytes
// or not UTF-8, on the field "text".
func CheckPromptText(text string) *FieldError {
	switch {
	case strings.TrimSpace(text) == "":
		return refuse("text", "required")
	case len(text) > MaxPromptBytes:
		return refuse("text", "at most %d bytes, got %d", MaxPromptBytes, len(text))
	case !utf8.ValidString(text):
		return refuse("text", "must be valid UTF-8")
	}
	return nil
}

// FillPrompt puts values[name] in place of each {{name}} and removes a
// placeholder that has no value. It is one pass: a value containing
// "{{other}}" is not expanded again, so a run cannot inject a fixed value.
func FillPrompt(text string, values map[string]string) string {
	return placeholder.ReplaceAllStringFunc(text, func(m string) string {
		return values[m[2:len(m)-2]]
	})
}
