package mount

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agenttask/agenttask/contract"
)

// Limits on references.
const (
	MaxRootLen      = 32
	MaxPathBytes    = 1024
	MaxSegmentBytes = 255
)

// CheckRoot checks a mount root name: 1-32 lowercase ASCII letters or
// digits, starting with a letter. The root is the scheme of the mount's
// references (root "task" gives task://name).
func CheckRoot(root string) error {
	ok := len(root) >= 1 && len(root) <= MaxRootLen && root[0] >= 'a' && root[0] <= 'z'
	for i := 0; ok && i < len(root); i++ {
		c := root[i]
		ok = 'a' <= c && c <= 'z' || '0' <= c && c <= '9'
	}
	if !ok {
		return contract.Invalid("mount root %q: use 1-%d lowercase letters or digits, starting with a letter (e.g. \"task\")", root, MaxRootLen)
	}
	return nil
}

// FormatRef renders the reference of path in the mount with root root. For
// every path ParseRef accepts, ParseRef(root, FormatRef(root, path)) gives
// path back: accepted paths need no escaping.
func FormatRef(root, path string) string { return root + "://" + path }

// ParseRef reads a file reference "<root>://<relative path>" and returns the
// path inside the task's space. It is deliberately not a URL parser
// (url.Parse reads task://dir/a.txt as host "dir") and decodes nothing: what
// follows "://" is the path, byte for byte, or the reference is refused with
// a corrective *contract.Error of type INVALID_INPUT.
//
// Refused: another root or scheme (http://, s3://, file://, data:, ...), a
// missing "://", an empty path, an absolute path (task:///x, a drive letter),
// '%' anywhere (no percent-decoding, so %2e%2e or %2f cannot smuggle
// traversal), backslashes, control characters (NUL included), a trailing
// '/', empty segments (a//b), "." and ".." segments, paths over 1024 bytes,
// segments over 255 bytes and invalid UTF-8.
func ParseRef(root, ref string) (string, error) {
	if err := CheckRoot(root); err != nil {
		return "", err
	}
	example := FormatRef(root, "report.pdf")
	i := strings.Index(ref, "://")
	if i < 0 {
		if strings.HasPrefix(strings.ToLower(ref), "data:") {
			return "", contract.Invalid("file reference %.64q is a data: URL; bytes never travel inline: upload them into the agent's mount and refer to them by name, e.g. %s", ref, example)
		}
		return "", contract.Invalid("file reference %q has no \"://\"; write it as %s://<path inside the task's space>, e.g. %s", ref, root, example)
	}
	scheme := ref[:i]
	if scheme != root {
		switch strings.ToLower(scheme) {
		case "http", "https":
			return "", contract.Invalid("file reference %q is a remote URL; the runtime never fetches content from elsewhere: download it, upload it into the agent's mount and refer to it by name, e.g. %s", ref, example)
		case root:
			return "", contract.Invalid("file reference %q: the root is written %q; write it in lower case: %s", ref, scheme, FormatRef(root, ref[i+3:]))
		}
		return "", contract.Invalid("file reference %q names root %q, but this agent's mount root is %q; content from other storage must be uploaded or copied into the mount first and referred to as %s://<name>", ref, scheme, root, root)
	}
	p := ref[i+3:]
	if err := checkPath(ref, p); err != nil {
		return "", err
	}
	return p, nil
}

// checkPath applies the path rules of ParseRef; ref names the reference in
// messages.
func checkPath(ref, p string) error {
	if p == "" {
		return contract.Invalid("file reference %q names no file; write the path inside the task's space after \"://\", e.g. task://report.pdf", ref)
	}
	if !utf8.ValidString(p) {
		return contract.Invalid("file reference %q is not valid UTF-8; send the name as UTF-8 text", ref)
	}
	if len(p) > MaxPathBytes {
		return contract.Invalid("file reference %.80q...: the path is %d bytes, over the %d-byte limit; use a shorter name", ref, len(p), MaxPathBytes)
	}
	if p[0] == '/' {
		return contract.Invalid("file reference %q: the path is absolute; paths are relative to the task's space: write task://x (two slashes), not task:///x", ref)
	}
	if len(p) >= 2 && p[1] == ':' && (p[0]|0x20 >= 'a' && p[0]|0x20 <= 'z') && (len(p) == 2 || p[2] == '/') {
		return contract.Invalid("file reference %q: the path starts with a drive letter, an absolute path; paths are relative to the task's space, e.g. task://dir/file.txt", ref)
	}
	if strings.IndexByte(p, '%') >= 0 {
		return contract.Invalid("file reference %q: '%%' is not allowed: references are never percent-decoded; write the name as plain UTF-8 (task://my file.txt, not task://my%%20file.txt)", ref)
	}
	if strings.IndexByte(p, '\\') >= 0 {
		return contract.Invalid("file reference %q: backslash is not allowed; separate folders with '/'", ref)
	}
	for j, r := range p {
		if unicode.IsControl(r) {
			return contract.Invalid("file reference %q: control character %U at byte %d is not allowed; remove it", ref, r, j)
		}
	}
	if p[len(p)-1] == '/' {
		return contract.Invalid("file reference %q: the path ends in '/', which names a folder; name a file, e.g. task://dir/file.txt", ref)
	}
	for seg := range strings.SplitSeq(p, "/") {
		switch {
		case seg == "":
			return contract.Invalid("file reference %q: the path has an empty segment (\"//\"); separate folders with a single '/'", ref)
		case seg == "." || seg == "..":
			return contract.Invalid("file reference %q: %q segments are not allowed: a reference cannot leave the task's space or step between folders; name the file by its plain path, e.g. task://dir/file.txt", ref, seg)
		case len(seg) > MaxSegmentBytes:
			return contract.Invalid("file reference %.80q...: a segment is %d bytes, over the %d-byte limit of a file or folder name; use a shorter name", ref, len(seg), MaxSegmentBytes)
		}
	}
	return nil
}

// checkStorePath checks a path handed to a Store method (not a full reference).
func checkStorePath(root, p string) error {
	return checkPath(FormatRef(root, p), p)
}
