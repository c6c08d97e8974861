package transcript

import (
	"errors"
	"fmt"

	"github.com/agenttask/agenttask/internal/blobkey"
)

// Key is a transcript's identity: one per task chain, that is the task
// (workflow) ID plus the ID of the chain's first run, so a task ID reused
// after the chain ended starts a fresh transcript.
//
// A task that continues an earlier one (rescue, resume) has its own
// transcript whose positions below From are the earlier task's, read from
// there and never written: Parent names that transcript (one level; further
// ancestors are found through each transcript's link object, so a key stays
// small however long the chain of continuations grows).
type Key struct {
	TaskID     string `json:"task_id"`
	FirstRunID string `json:"first_run_id"`
	From       int    `json:"from,omitempty"`
	Parent     *Link  `json:"parent,omitempty"`
}

// Link names the transcript a continuation reads its first positions from,
// and where that transcript's own entries begin.
type Link struct {
	TaskID     string `json:"task_id"`
	FirstRunID string `json:"first_run_id"`
	From       int    `json:"from,omitempty"`
}

// Key is the link's transcript; its own parent is in its link object.
func (l Link) Key() Key { return Key{TaskID: l.TaskID, FirstRunID: l.FirstRunID, From: l.From} }

func (k Key) String() string { return k.TaskID + "/" + k.FirstRunID }

// prefix is the folder of the transcript, ending in "/".
func (k Key) prefix() (string, error) {
	if k.TaskID == "" || k.FirstRunID == "" {
		return "", fmt.Errorf("transcript: key %+v needs a task ID and a first run ID", k)
	}
	return "tasks/" + blobkey.Segment(k.TaskID) + "/" + blobkey.Segment(k.FirstRunID) + "/", nil
}

func (k Key) entryKey(pos int) (string, error) {
	p, err := k.prefix()
	if err != nil {
		return "", err
	}
	if pos < 0 || int64(pos) > maxPosition {
		return "", fmt.Errorf("transcript: position %d out of range", pos)
	}
	return fmt.Sprintf("%sentries/%010d.json", p, pos), nil
}

// linkKey is where a continuation's transcript records its Parent.
func (k Key) linkKey() (string, error) {
	p, err := k.prefix()
	if err != nil {
		return "", err
	}
	return p + "link.json", nil
}

func (k Key) stashKey(name string) (string, error) {
	p, err := k.prefix()
	if err != nil {
		return "", err
	}
	if name == "" {
		return "", errors.New("transcript: empty stash name")
	}
	return p + "stash/" + blobkey.Segment(name) + ".json", nil
}

const (
	maxPosition int64 = 9_999_999_999 // ten digits keep keys sorted by position
)
