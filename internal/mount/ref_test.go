package mount

import (
	"path"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agenttask/agenttask/contract"
)

func TestParseRefAccepts(t *testing.T) {
	seg := strings.Repeat("a", 255)
	long := seg + "/" + seg + "/" + seg + "/" + seg[1:] + "/b" // 1024 bytes, longest segments allowed
	for _, tc := range []struct{ root, ref, want string }{
		{"task", "task://a.txt", "a.txt"},
		{"task", "task://dir/sub/file-1.mp4", "dir/sub/file-1.mp4"},
		{"task", "task://vidéo/日本語のファイル.mp4", "vidéo/日本語のファイル.mp4"},
		{"task", "task://my file (1).txt", "my file (1).txt"},
		{"task", "task://.hidden", ".hidden"},
		{"task", "task://a..b/...", "a..b/..."},
		{"task", "task://a../b", "a../b"},
		{"task", "task://a?b#c", "a?b#c"},
		{"task", "task://c:d", "c:d"},
		{"task", "task://" + strings.Repeat("x", 255), strings.Repeat("x", 255)},
		{"task", "task://" + long, long},
		{"media2", "media2://x.png", "x.png"},
	} {
		got, err := ParseRef(tc.root, tc.ref)
		if err != nil {
			t.Errorf("ParseRef(%q, %.60q): %v", tc.root, tc.ref, err)
			continue
		}
		if got != tc.want {
			t.Errorf("ParseRef(%q, %.60q) = %.60q, want %.60q", tc.root, tc.ref, got, tc.want)
		}
		if back := FormatRef(tc.root, got); back != tc.ref {
			t.Errorf("FormatRef(%q, %.60q) = %.60q, want %.60q", tc.root, got, back, tc.ref)
		}
	}
	if n := len(long); n != MaxPathBytes {
		t.Fatalf("long path is %d bytes", n)
	}
}

// Every refused form, each with the words only its own rule uses: removing a
// rule either lets the reference through or has another rule refuse it with
// other words, and the test fails either way.
func TestParseRefRefuses(t *testing.T) {
	tooLong := strings.Repeat(strings.Repeat("a", 200)+"/", 5) + "bbbbbbbbbbbbbbbbbbbbbbbb" // 1029 bytes, short segments
	for _, tc := range []struct{ name, ref, want string }{
		{"http", "http://example.com/a.mp4", "remote URL"},
		{"https", "https://example.com/a.mp4", "remote URL"},
		{"s3", "s3://bucket/a.mp4", `names root "s3"`},
		{"file", "file:///etc/passwd", `names root "file"`},
		{"gs", "gs://bucket/a", `names root "gs"`},
		{"other root", "media://a.png", `names root "media"`},
		{"prefix of root", "tas://a.png", `names root "tas"`},
		{"root as suffix", "xtask://a.png", `names root "xtask"`},
		{"upper case root", "TASK://a.txt", "lower case"},
		{"data URL", "data:text/plain;base64,SGVsbG8=", "data: URL"},
		{"data URL upper", "DATA:,hi", "data: URL"},
		{"no scheme", "a.txt", `no "://"`},
		{"one slash", "task:/a.txt", `no "://"`},
		{"no slashes", "task:a.txt", `no "://"`},
		{"empty", "", `no "://"`},
		{"empty path", "task://", "names no file"},
		{"absolute", "task:///x", "absolute"},
		{"absolute root only", "task:///", "absolute"},
		{"absolute etc", "task:////etc/passwd", "absolute"},
		{"drive letter", "task://C:/Windows/win.ini", "drive letter"},
		{"drive letter alone", "task://c:", "drive letter"},
		{"dotdot", "task://..", `".." segments`},
		{"dotdot first", "task://../other/files/x", `".." segments`},
		{"dotdot middle", "task://a/../b", `".." segments`},
		{"dotdot last", "task://a/..", `".." segments`},
		{"dot", "task://.", `"." segments`},
		{"dot first", "task://./a", `"." segments`},
		{"dot middle", "task://a/./b", `"." segments`},
		{"empty segment", "task://a//b", "empty segment"},
		{"empty segments", "task://a///b", "empty segment"},
		{"backslash", `task://a\b`, "backslash"},
		{"backslash traversal", `task://..\..\x`, "backslash"},
		{"NUL", "task://a\x00b", "control character U+0000"},
		{"NUL last", "task://a.txt\x00", "control character U+0000"},
		{"newline", "task://a\nb", "control character U+000A"},
		{"tab", "task://a\tb", "control character U+0009"},
		{"DEL", "task://a\x7fb", "control character U+007F"},
		{"C1 control", "task://a\u0085b", "control character U+0085"},
		{"percent dotdot", "task://%2e%2e/x", "'%' is not allowed"},
		{"percent slash", "task://a%2fb", "'%' is not allowed"},
		{"percent upper", "task://%2E%2E%2Fx", "'%' is not allowed"},
		{"percent space", "task://my%20file.txt", "'%' is not allowed"},
		{"bare percent", "task://100%", "'%' is not allowed"},
		{"double encoded", "task://%252e%252e/x", "'%' is not allowed"},
		{"trailing slash", "task://a/", "ends in '/'"},
		{"trailing slash deep", "task://dir/sub/", "ends in '/'"},
		{"path too long", "task://" + tooLong, "over the 1024-byte limit"},
		{"segment too long", "task://" + strings.Repeat("s", 256), "over the 255-byte limit"},
		{"segment too long deep", "task://d/" + strings.Repeat("é", 128) + "/f", "over the 255-byte limit"},
		{"invalid UTF-8", "task://\xff.txt", "not valid UTF-8"},
		{"truncated UTF-8", "task://a\xc3", "not valid UTF-8"},
		{"overlong UTF-8 slash", "task://a\xc0\xafb", "not valid UTF-8"},
		{"overlong UTF-8 dot", "task://\xc0\xae\xc0\xae/x", "not valid UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParseRef("task", tc.ref)
			if err == nil {
				t.Fatalf("ParseRef(%.60q) accepted it as %.60q", tc.ref, p)
			}
			if typ := contract.TypeOf(err); typ != contract.ErrInvalidInput {
				t.Fatalf("ParseRef(%.60q): type %q, want INVALID_INPUT: %v", tc.ref, typ, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ParseRef(%.60q): %v\nwant the message to say %q", tc.ref, err, tc.want)
			}
			if p != "" {
				t.Fatalf("a refusal returned path %q", p)
			}
		})
	}
	if len(tooLong) <= MaxPathBytes {
		t.Fatalf("tooLong is %d bytes", len(tooLong))
	}
}

// Refusals say what to do, not only what is wrong.
func TestParseRefMessagesAreCorrective(t *testing.T) {
	for ref, hint := range map[string]string{
		"task://a/../b":        "name the file by its plain path",
		"task://%2e%2e/x":      "write the name as plain UTF-8",
		"https://x.test/a.mp4": "upload it into the agent's mount",
		"task:///x":            "write task://x",
		"a.txt":                "write it as task://",
		"task://a/":            "name a file",
		`task://a\b`:           "separate folders with '/'",
		"s3://b/k":             "uploaded or copied into the mount first",
	} {
		_, err := ParseRef("task", ref)
		if err == nil || !strings.Contains(err.Error(), hint) {
			t.Errorf("ParseRef(%q) = %v, want a message with %q", ref, err, hint)
		}
	}
}

func TestCheckRoot(t *testing.T) {
	for _, ok := range []string{"task", "t", "a1", "media2", strings.Repeat("x", 32)} {
		if err := CheckRoot(ok); err != nil {
			t.Errorf("CheckRoot(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "Task", "1task", "ta-sk", "ta_sk", "täsk", "http:", strings.Repeat("x", 33), " task"} {
		err := CheckRoot(bad)
		if contract.TypeOf(err) != contract.ErrInvalidInput || !strings.Contains(err.Error(), "lowercase letters or digits") {
			t.Errorf("CheckRoot(%q) = %v, want INVALID_INPUT", bad, err)
		}
		if _, err := ParseRef(bad, bad+"://a.txt"); contract.TypeOf(err) != contract.ErrInvalidInput {
			t.Errorf("ParseRef with root %q = %v, want INVALID_INPUT", bad, err)
		}
	}
}

// fuzzSeeds also live in testdata/fuzz/FuzzParseRef (see TestFuzzCorpusOnDisk).
var fuzzSeeds = []string{
	"task://a.txt", "task://dir/sub/file-1.mp4", "task://vidéo/日本語.mp4",
	"task://", "task:", "task:/", "task:///", "task:///etc/passwd", "task:////x",
	"task://..", "task://../x", "task://a/../../b", "task://a/..", "task://./a", "task://a/.",
	"task://...", "task://a../b", "task://..a", "task://.../..",
	"task://%2e%2e/x", "task://%2E%2E%2F", "task://a%00b", "task://%", "task://%%32%65",
	"task://a\\b", "task://..\\..", "task://a\x00b", "task://a\nb", "task://\u0085",
	"task://a//b", "task://a/", "task:///", "task://C:/x", "task://c:",
	"task://\xff", "task://\xc0\xae\xc0\xae/x", "task://\xed\xa0\x80",
	"http://example.com/a", "https://x/y", "s3://b/k", "file:///etc/passwd", "data:,hi",
	"TASK://a", "task:\\\\server\\share", "task://a?b#c", "task://task://a", "://a", "",
	"task://\u202egnp.exe", "task://a\u2215b", "task://\uff0e\uff0e/x",
}

func FuzzParseRef(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ref string) {
		p, err := ParseRef("task", ref)
		if err != nil {
			if contract.TypeOf(err) != contract.ErrInvalidInput {
				t.Fatalf("ParseRef(%q): %v is not INVALID_INPUT", ref, err)
			}
			if p != "" {
				t.Fatalf("ParseRef(%q) refused it but returned %q", ref, p)
			}
			return
		}
		checkAcceptedPath(t, ref, p)
		if ref != FormatRef("task", p) {
			t.Fatalf("ParseRef(%q) = %q, but FormatRef gives %q", ref, p, FormatRef("task", p))
		}
		again, err := ParseRef("task", FormatRef("task", p))
		if err != nil || again != p {
			t.Fatalf("FormatRef(%q) parses back to %q, %v", p, again, err)
		}
	})
}

func checkAcceptedPath(t *testing.T, ref, p string) {
	t.Helper()
	bad := func(why string) { t.Fatalf("ParseRef(%q) accepted %q: %s", ref, p, why) }
	switch {
	case p == "":
		bad("empty")
	case strings.HasPrefix(p, "/"):
		bad("leading /")
	case strings.HasSuffix(p, "/"):
		bad("trailing /")
	case strings.Contains(p, "\\"):
		bad("backslash")
	case strings.Contains(p, "%"):
		bad("percent")
	case strings.Contains(p, "//"):
		bad("empty segment")
	case !utf8.ValidString(p):
		bad("invalid UTF-8")
	case len(p) > MaxPathBytes:
		bad("too long")
	case !filepath.IsLocal(p):
		bad("not local")
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." || len(seg) > MaxSegmentBytes {
			bad("segment " + seg)
		}
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			bad("control character")
		}
	}
	// Joined under a task's space it stays inside, and cleaning changes nothing.
	const space = "/tasks/t/files"
	if j := path.Join(space, p); !strings.HasPrefix(j, space+"/") || j != space+"/"+p {
		bad("escapes or is not clean: " + j)
	}
}

// The seed corpus on disk runs in plain `go test` as FuzzParseRef's seeds;
// this keeps it from silently disappearing.
func TestFuzzCorpusOnDisk(t *testing.T) {
	ents, err := filepath.Glob(filepath.Join("testdata", "fuzz", "FuzzParseRef", "*"))
	if err != nil || len(ents) < 30 {
		t.Fatalf("testdata/fuzz/FuzzParseRef holds %d entries (%v), want the seed corpus", len(ents), err)
	}
}
