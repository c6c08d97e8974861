package workflows

import (
	"encoding/json"
	"strings"

	"github.com/agenttask/agenttask/internal/activities"
)

// A secret's value is never written again once the first run has it: the
// next run's start argument holds "[secret]" in its place. To keep masking
// what the task saves after continue-as-new (a capability's result that
// echoes a key, say), the state carries a print of each secret instead: its
// length, a rolling hash and its SHA-256 (rules.secretPrints). A window of text
// whose rolling hash matches is masked when its SHA-256 matches too; the
// value itself is not recoverable from the print.

// secretPrint identifies one form of a secret's value (as text, or as it
// reads escaped inside a JSON string); the activities mask with the same
// prints (activities.MaskPrints).
type secretPrint = activities.SecretPrint

// printsOf prints every secret value the start argument has.
func printsOf(args StartArgs) []secretPrint {
	var out []secretPrint
	for _, name := range args.Secrets {
		v := plain(args.Variables[name])
		if v == "" || v == "[secret]" {
			continue
		}
		forms := []string{v}
		if q, _ := json.Marshal(v); len(q) > 2 && string(q[1:len(q)-1]) != v {
			forms = append(forms, string(q[1:len(q)-1]))
		}
		for _, f := range forms {
			out = append(out, activities.PrintOf(f))
		}
	}
	return out
}

// maskPrints replaces every window of s that a print identifies.
func maskPrints(s string, prints []secretPrint) string { return activities.MaskPrints(s, prints) }

// mask replaces every secret's value in s, as text and as it reads inside
// a JSON string (escaped). After continue-as-new the values are gone (they
// are never written again): the secrets' prints mask them then.
func (t *task) mask(s string) string {
	s = maskPrints(s, t.durable.SecretPrints)
	for _, name := range t.args.Secrets {
		v := plain(t.args.Variables[name])
		if v == "" || v == "[secret]" {
			continue
		}
		s = strings.ReplaceAll(s, v, "[secret]")
		if q, _ := json.Marshal(v); len(q) > 2 {
			s = strings.ReplaceAll(s, string(q[1:len(q)-1]), "[secret]")
		}
	}
	return s
}

// maskJSON masks secrets inside a JSON value's strings, whatever escaping
// the value was written with (activities.MaskJSON).
func (t *task) maskJSON(raw json.RawMessage) json.RawMessage {
	if len(t.args.Secrets) == 0 {
		return raw
	}
	return activities.MaskJSON(raw, t.mask)
}
