package contract

import (
	"encoding/hex"
	"strings"
)

// References that appear in the contract's replies and in StartArgs.continue:
// where a task's conversation and its large values are stored.

// TranscriptKey names a task's append-only transcript: one per chain of
// runs (the task ID and the first run's ID, so a reused task ID starts afresh).
// A task that continues another has its own transcript: positions below From
// are read from the one Parent names (and its ancestors), never written.
type TranscriptKey struct {
	TaskID     string          `json:"task_id"`
	FirstRunID string          `json:"first_run_id"`
	From       int             `json:"from,omitempty"`
	Parent     *TranscriptLink `json:"parent,omitempty"`
}

// TranscriptLink names the transcript a continuation reads its first
// positions from, and where that transcript's own entries begin.
type TranscriptLink struct {
	TaskID     string `json:"task_id"`
	FirstRunID string `json:"first_run_id"`
	From       int    `json:"from,omitempty"`
}

// ID identifies the transcript (From and Parent follow from it).
func (k TranscriptKey) ID() string { return k.TaskID + "/" + k.FirstRunID }

const (
	// MaxSavedValueBytes bounds one saved value, serialised as compact JSON:
	// a larger save is refused to the model.
	MaxSavedValueBytes = 256 << 10
	// ValueStashPrefix starts the stash name of a value kept by reference:
	// value-<sha256 hex>.
	ValueStashPrefix = "value-"
)

// ValueRef names a saved value stored whole in the task's stash: beside the
// transcript, at tasks/<task id>/<first run id>/stash/<Stash>.json, the
// value's compact JSON, Bytes long, whose SHA-256 is SHA256.
type ValueRef struct {
	Stash  string `json:"stash"`
	Bytes  int    `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// Valid reports whether r has the shape this runtime writes.
func (r ValueRef) Valid() bool {
	if r.Stash != ValueStashPrefix+r.SHA256 || len(r.SHA256) != 64 || r.Bytes <= 0 || r.Bytes > MaxSavedValueBytes {
		return false
	}
	_, err := hex.DecodeString(r.SHA256)
	return err == nil && strings.ToLower(r.SHA256) == r.SHA256
}
