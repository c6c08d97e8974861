package activities

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// Parts are at most StashPartBytes, valid UTF-8 each (a multi-byte rune is
// never cut), and join back to the original; a missing or altered part is
// refused.
func TestSplitAndJoinStash(t *testing.T) {
	data := []byte(strings.Repeat("é€x", 3*StashPartBytes/6+7)) // runes of 2, 3 and 1 bytes across every boundary
	ref, parts := SplitStash(TranscriptKey{TaskID: "t", FirstRunID: "r"}, "carry-1.1", data)
	if ref.Parts != len(parts) || len(parts) < 3 || ref.Bytes != len(data) {
		t.Fatalf("ref %+v for %d parts of %d bytes", ref, len(parts), len(data))
	}
	for i, p := range parts {
		if len(p) > StashPartBytes || !utf8.ValidString(p) {
			t.Fatalf("part %d: %d bytes, valid UTF-8 %v", i, len(p), utf8.ValidString(p))
		}
	}
	got, err := JoinStash(ref, parts)
	if err != nil || string(got) != string(data) {
		t.Fatalf("join: %v", err)
	}
	if _, err := JoinStash(ref, parts[:len(parts)-1]); err == nil {
		t.Fatal("a missing part was accepted")
	}
	altered := append([]string(nil), parts...)
	altered[0] = "x" + altered[0][1:]
	if _, err := JoinStash(ref, altered); err == nil {
		t.Fatal("an altered part was accepted")
	}
	if ref.PartName(2) != "carry-1.1.2" {
		t.Fatalf("part name %q", ref.PartName(2))
	}
}
