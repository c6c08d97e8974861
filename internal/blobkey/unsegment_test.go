package blobkey

import (
	"strings"
	"testing"
)

func TestUnsegmentReadsBackWhatSegmentEscaped(t *testing.T) {
	for _, s := range []string{"run-abc", "Task.Cap.t1.c0", "a/b..c%d", "ü"} {
		if got, ok := Unsegment(Segment(s)); !ok || got != s {
			t.Errorf("Unsegment(Segment(%q)) = %q, %v", s, got, ok)
		}
	}
	for _, seg := range []string{Segment(strings.Repeat("x", 300)), "%4", "%zz", "%61"} { // hashed, cut, bad hex, not canonical (a is never escaped)
		if got, ok := Unsegment(seg); ok {
			t.Errorf("Unsegment(%q) = %q, want not ok", seg, got)
		}
	}
}
