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

// secrets masks the task's secrets: while the start argument has their
// values, by value; after continue-as-new (the values are never written
// again), by the carried prints.
type secrets struct {
	names  []string                   // the variables that are secret (StartArgs.Secrets)
	values map[string]json.RawMessage // the variables (StartArgs.Variables)
	prints []secretPrint              // the carried prints
}

// secrets are the task's secrets: the start argument's, and the prints.
func (t *task) secrets() secrets { return t.durable.secrets(&t.args) }

// mask replaces every secret's value in s, as text and as it reads inside
// a JSON string (escaped). After continue-as-new the values are gone (they
// are never written again): the secrets' prints mask them then.
func (m secrets) mask(s string) string {
	s = maskPrints(s, m.prints)
	for _, name := range m.names {
		v := plain(m.values[name])
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
func (m secrets) maskJSON(raw json.RawMessage) json.RawMessage {
	if len(m.names) == 0 {
		return raw
	}
	return activities.MaskJSON(raw, m.mask)
}

// secretsRecord is the carried part of the secrets.
type secretsRecord struct {
	// SecretPrints identify the secrets' values once the start argument no
	// longer has them (rules.secretPrints).
	SecretPrints []secretPrint `json:"secret_prints,omitempty"`
}

// keepPrints prints the start argument's secrets, so the task masks them
// after the values are gone (rules.secretPrints).
func (r *secretsRecord) keepPrints(args StartArgs) { r.SecretPrints = printsOf(args) }

// secrets are the task's secrets: the start argument's values (args), and
// the prints.
func (r *secretsRecord) secrets(args *StartArgs) secrets {
	return secrets{names: args.Secrets, values: args.Variables, prints: r.SecretPrints}
}

// largeValues asks a model call to keep saved values over maxSavedBytes
// whole in the stash and to return references in their place (a save
// call's arguments, an output's ValueRefs), masking secrets by their
// prints (on: rules.savedByRef).
func (r *secretsRecord) largeValues(on bool, in *activities.ModelTurnInput) {
	if !on {
		return
	}
	in.LargeValues = &activities.LargeValues{Prints: append([]secretPrint(nil), r.SecretPrints...)}
}
