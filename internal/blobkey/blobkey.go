// Package blobkey maps names (task IDs, run IDs, stash names) to safe blob
// key segments. The transcript and the mounts both keep a task under
// tasks/<segment>/, so they must escape task IDs the same way: this is that way.
package blobkey

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// MaxSegment keeps a segment well below the 255-byte file name limit of
// local file systems.
const MaxSegment = 160

// Segment maps any string to one path segment, injectively. Only [a-z0-9_-]
// pass through; every other byte, including '.', '/', '%' and upper-case
// letters, becomes %hh with lower-case hex. So no segment is "." or "..",
// none holds a separator, and none differs from another only in case (local
// folders on macOS and Windows fold case). Over-long results are cut and
// suffixed with "~" and the SHA-256 of the raw string; '~' never appears
// otherwise, so the two forms cannot collide.
func Segment(s string) string {
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
	if len(out) <= MaxSegment {
		return out
	}
	sum := sha256.Sum256([]byte(s))
	cut := MaxSegment - 1 - 2*len(sum)
	// Don't leave half an escape before the suffix; it only hurts readability.
	if i := strings.LastIndexByte(out[:cut], '%'); i >= cut-2 {
		cut = i
	}
	return out[:cut] + "~" + hex.EncodeToString(sum[:])
}
