package blobkey

import "strings"

// Unsegment reads a Segment back into the string it escaped. A segment
// shortened with a hash ("~" and the sum) or malformed cannot be read back:
// ok is false.
func Unsegment(seg string) (string, bool) {
	if strings.Contains(seg, "~") {
		return "", false
	}
	var b strings.Builder
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		if i+2 >= len(seg) {
			return "", false
		}
		h, l := unhex(seg[i+1]), unhex(seg[i+2])
		if h < 0 || l < 0 {
			return "", false
		}
		b.WriteByte(byte(h<<4 | l))
		i += 2
	}
	out := b.String()
	return out, Segment(out) == seg
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	}
	return -1
}
