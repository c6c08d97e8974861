package mount

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
)

// spacePrefix is the folder of a task's space in its mount, ending in "/":
// tasks/<escaped task id>/files/. Next to it, under tasks/<escaped task id>/,
// the transcript keeps <first run id>/ folders when it shares the bucket; run
// IDs are never "files".
func spacePrefix(taskID string) (string, error) {
	if taskID == "" {
		return "", errors.New("mount: empty task ID")
	}
	return "tasks/" + escapeSegment(taskID) + "/files/", nil
}

// objectKey is the blob key of path (already checked) in the task's space.
func objectKey(taskID, path string) (string, error) {
	p, err := spacePrefix(taskID)
	if err != nil {
		return "", err
	}
	return p + path, nil
}

// maxSegment keeps an escaped task ID well below the 255-byte file name limit
// of local file systems.
const maxSegment = 160

// escapeSegment maps any string to one path segment, injectively; it is the
// escaping transcript/key.go applies to task IDs, so both put a task under the
// same tasks/<id>/ folder. Only [a-z0-9_-] pass through; every other byte,
// including '.', '/', '%' and upper-case letters, becomes %hh with lower-case
// hex. So no segment is "." or "..", none holds a separator, and none differs
// from another only in case (local folders on macOS and Windows fold case).
// Over-long results are cut and suffixed with "~" and the SHA-256 of the raw
// string; '~' never appears otherwise, so the two forms cannot collide.
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
	if i := strings.LastIndexByte(out[:cut], '%'); i >= cut-2 {
		cut = i
	}
	return out[:cut] + "~" + hex.EncodeToString(sum[:])
}
