package transcript

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// Key is a transcript's identity: one per task chain, that is the task
// (workflow) ID plus the ID of the chain's first run, so a task ID reused
// after the chain ended starts a fresh transcript.
type Key struct {
	TaskID     string `json:"task_id"`
	FirstRunID string `json:"first_run_id"`
}

func (k Key) String() string { return k.TaskID + "/" + k.FirstRunID }

// prefix is the folder of the transcript, ending in "/".
func (k Key) prefix() (string, error) {
	if k.TaskID == "" || k.FirstRunID == "" {
		return "", fmt.Errorf("transcript: key %+v needs a task ID and a first run ID", k)
	}
	return "tasks/" + escapeSegment(k.TaskID) + "/" + escapeSegment(k.FirstRunID) + "/", nil
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

func (k Key) stashKey(name string) (string, error) {
	p, err := k.prefix()
	if err != nil {
		return "", err
	}
	if name == "" {
		return "", errors.New("transcript: empty stash name")
	}
	return p + "stash/" + escapeSegment(name) + ".json", nil
}

const (
	maxPosition int64 = 9_999_999_999 // ten digits keep keys sorted by position
	// maxSegment keeps an escaped segment well below the 255-byte file name
	// limit of local file systems.
	maxSegment = 160
)

// escapeSegment maps any string to one path segment, injectively. Only
// [a-z0-9_-] pass through; every other byte, including '.', '/', '%' and
// upper-case letters, becomes %hh with lower-case hex. So no segment is "."
// or "..", none holds a separator, and none differs from another only in
// case (local folders on macOS and Windows fold case). Over-long results are
// cut and suffixed with "~" and the SHA-256 of the raw string; '~' never
// appears otherwise, so the two forms cannot collide.
func escapeSegment(s string) string {
	const hexdigits = "0123456789abcdef"
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexdigits[c>>4])
		b.WriteByte(hexdigits[c&15])
	}
	out := b.String()
	if len(out) <= maxSegment {
		return out
	}
	sum := sha256.Sum256([]byte(s))
	cut := maxSegment - 1 - 2*len(sum)
	// Don't leave half an escape before the suffix; it only hurts readability.
	if i := strings.LastIndexByte(out[:cut], '%'); i >= cut-2 {
		cut = i
	}
	return out[:cut] + "~" + hex.EncodeToString(sum[:])
}
