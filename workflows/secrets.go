package workflows

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
)

// A secret's value is never written again once the first run has it: the
// next run's start argument holds "[secret]" in its place. To keep masking
// what the task saves after continue-as-new (a capability's result that
// echoes a key, say), the state carries a print of each secret instead: its
// length, a rolling hash and its SHA-256 (rulesBounds). A window of text
// whose rolling hash matches is masked when its SHA-256 matches too; the
// value itself is not recoverable from the print.

// secretPrint identifies one form of a secret's value (as text, or as it
// reads escaped inside a JSON string).
type secretPrint struct {
	Len  int    `json:"len"`
	Roll uint64 `json:"roll"`
	Sum  string `json:"sum"`
}

const rollBase = 1_000_003

// rollHash is the polynomial hash of b (mod 2^64).
func rollHash(b string) uint64 {
	var h uint64
	for i := 0; i < len(b); i++ {
		h = h*rollBase + uint64(b[i])
	}
	return h
}

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

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
			out = append(out, secretPrint{Len: len(f), Roll: rollHash(f), Sum: sum(f)})
		}
	}
	return out
}

// maskPrints replaces every window of s that a print identifies.
func maskPrints(s string, prints []secretPrint) string {
	for _, p := range prints {
		if p.Len == 0 || p.Len > len(s) {
			continue
		}
		var pow uint64 = 1 // rollBase^(Len-1)
		for i := 1; i < p.Len; i++ {
			pow *= rollBase
		}
		var b strings.Builder
		h, last := rollHash(s[:p.Len]), 0
		for i := 0; i+p.Len <= len(s); {
			if h == p.Roll && sum(s[i:i+p.Len]) == p.Sum {
				b.WriteString(s[last:i])
				b.WriteString("[secret]")
				last, i = i+p.Len, i+p.Len
				if i+p.Len <= len(s) {
					h = rollHash(s[i : i+p.Len])
				}
				continue
			}
			if i+p.Len < len(s) {
				h = (h-uint64(s[i])*pow)*rollBase + uint64(s[i+p.Len])
			}
			i++
		}
		if last > 0 {
			b.WriteString(s[last:])
			s = b.String()
		}
	}
	return s
}
