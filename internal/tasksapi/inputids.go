package tasksapi

import (
	"crypto/sha256"
	"encoding/base32"
	"strings"
)

// inputUpdateID is the send update's ID for a follow-up input with an
// Idempotency-Key ("" without one: the SDK makes a random ID). It is
// derived from the caller's key, the run and the Idempotency-Key, so a
// repeated POST, from this API process or another, after a restart, sends
// an update of the same ID. The run remembers the update IDs of the inputs
// it took (its last 1,000, across continue-as-new: internal/workflows
// intake.go) and answers a repeat with the first receipt, creating no
// second input. As for runs, the key alone names the request: a repeat
// with another body gets the first receipt too, and sends nothing.
func inputUpdateID(keyID, runID, idempotencyKey string) string {
	if idempotencyKey == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(keyID + "\x00" + runID + "\x00" + idempotencyKey))
	// 6 + 26 characters: under the 40 the run keeps as they are.
	return "input-" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:16]))
}
