package mount

import (
	"github.com/agenttask/agenttask/internal/blobkey"

	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenttask/agenttask/contract"
)

type driver struct {
	name  string
	spec  Spec
	dir   string // file:// only
	local bool
}

func drivers(t *testing.T) []driver {
	dir := t.TempDir()
	return []driver{
		{name: "mem", spec: Spec{Root: "task", URL: "mem://"}},
		{name: "file", spec: Spec{Root: "task", URL: "file://" + filepath.ToSlash(dir)}, dir: dir, local: true},
	}
}

func newStore(t *testing.T) *Store {
	s := NewStore()
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func hexSHA(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func wantType(t *testing.T, err error, typ string, words ...string) {
	t.Helper()
	if got := contract.TypeOf(err); got != typ {
		t.Fatalf("error %v: type %q, want %q", err, got, typ)
	}
	for _, w := range words {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("error %v: want it to say %q", err, w)
		}
	}
}

func upload(t *testing.T, s *Store, m Spec, task, path, content string) Object {
	t.Helper()
	_, o, err := s.Upload(context.Background(), m, task, path, "application/octet-stream", strings.NewReader(content))
	if err != nil {
		t.Fatalf("Upload %s %s: %v", task, path, err)
	}
	return o
}

func read(t *testing.T, s *Store, m Spec, task, path string) string {
	t.Helper()
	r, err := s.Open(context.Background(), m, task, path)
	if err != nil {
		t.Fatalf("Open %s %s: %v", task, path, err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	for _, d := range drivers(t) {
		t.Run(d.name, func(t *testing.T) {
			s := newStore(t)
			content := "hello, mount"
			part, up, err := s.Upload(ctx, d.spec, "task-1", "dir/sub/a.txt", "text/plain", strings.NewReader(content))
			if err != nil {
				t.Fatal(err)
			}
			if part.MimeType != "text/plain" || part.File == nil || *part.File != "task://dir/sub/a.txt" ||
				part.SizeBytes == nil || *part.SizeBytes != int64(len(content)) || part.Text != nil || part.Metadata != nil {
				b, _ := json.Marshal(part)
				t.Fatalf("part = %s", b)
			}
			if up.Path != "dir/sub/a.txt" || up.Size != int64(len(content)) || up.SHA256 != hexSHA([]byte(content)) {
				t.Fatalf("upload object = %+v", up)
			}
			// The reference round-trips to the same object.
			p, err := ParseRef(d.spec.Root, *part.File)
			if err != nil {
				t.Fatal(err)
			}
			var beats []int64
			o, err := s.Stat(ctx, d.spec, "task-1", p, func(n int64) { beats = append(beats, n) })
			if err != nil {
				t.Fatal(err)
			}
			if o != up {
				t.Fatalf("Stat = %+v\nUpload = %+v", o, up)
			}
			if d.local {
				if o.MD5 != "" || o.ETag == "" || o.ModTime.IsZero() {
					t.Fatalf("file:// object %+v: want no MD5, an ETag and a ModTime", o)
				}
				if _, err := os.Stat(filepath.Join(d.dir, "tasks", "task-1", "files", "dir", "sub", "a.txt")); err != nil {
					t.Fatalf("layout: %v", err)
				}
			} else if want := "md5 "; !strings.HasPrefix(o.version(), want) {
				t.Fatalf("mem object version %q, want an MD5", o.version())
			}
			if err := s.Verify(ctx, d.spec, "task-1", o); err != nil {
				t.Fatal(err)
			}
			// Objects travel through workflow state as JSON.
			var back Object
			b, _ := json.Marshal(o)
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if err := s.Verify(ctx, d.spec, "task-1", back); err != nil {
				t.Fatalf("Verify after a JSON round trip of %s: %v", b, err)
			}
			if got := read(t, s, d.spec, "task-1", p); got != content {
				t.Fatalf("Open read %q", got)
			}
			// Empty objects are objects too.
			e := upload(t, s, d.spec, "task-1", "empty", "")
			if e.Size != 0 || e.SHA256 != hexSHA(nil) {
				t.Fatalf("empty object %+v", e)
			}
			if o, err := s.Stat(ctx, d.spec, "task-1", "empty", nil); err != nil || o.SHA256 != e.SHA256 {
				t.Fatalf("Stat empty = %+v, %v", o, err)
			}
		})
	}
}

func TestTasksAreIsolated(t *testing.T) {
	ctx := context.Background()
	for _, d := range drivers(t) {
		t.Run(d.name, func(t *testing.T) {
			s := newStore(t)
			upload(t, s, d.spec, "alpha", "x.txt", "alpha's")
			for _, other := range []string{"beta", "Alpha", "alpha/files/..", "../alpha", "alpha/", "tasks/alpha", "alpha/files"} {
				_, err := s.Stat(ctx, d.spec, other, "x.txt", nil)
				wantType(t, err, ErrFileNotFound, "task://x.txt", "does not exist")
			}
			upload(t, s, d.spec, "beta", "x.txt", "beta's!")
			if got := read(t, s, d.spec, "alpha", "x.txt"); got != "alpha's" {
				t.Fatalf("alpha reads %q", got)
			}
			if got := read(t, s, d.spec, "beta", "x.txt"); got != "beta's!" {
				t.Fatalf("beta reads %q", got)
			}
			// An Object of one task does not verify in another.
			a, err := s.Stat(ctx, d.spec, "alpha", "x.txt", nil)
			if err != nil {
				t.Fatal(err)
			}
			wantType(t, s.Verify(ctx, d.spec, "gamma", a), ErrFileNotFound)
			wantType(t, s.Verify(ctx, d.spec, "beta", a), ErrFileChanged)
		})
	}
	// Same task ID, another mount: another storage.
	s := newStore(t)
	upload(t, s, Spec{Root: "task", URL: "mem://one"}, "alpha", "x.txt", "1")
	_, err := s.Stat(ctx, Spec{Root: "task", URL: "mem://two"}, "alpha", "x.txt", nil)
	wantType(t, err, ErrFileNotFound)
}

func TestEscapeSegment(t *testing.T) {
	seen := map[string]string{}
	for _, id := range []string{"a", "A", "..", ".", "a/b", "a%2fb", "a%2Fb", "ü", strings.Repeat("x", 500), strings.Repeat("x", 501), strings.Repeat("é", 300)} {
		e := blobkey.Segment(id)
		if e == "." || e == ".." || strings.ContainsAny(e, "/\\.") || len(e) > blobkey.MaxSegment {
			t.Errorf("blobkey.Segment(%.20q) = %q", id, e)
		}
		if prev, ok := seen[e]; ok {
			t.Errorf("blobkey.Segment(%.20q) = blobkey.Segment(%.20q) = %q", id, prev, e)
		}
		seen[e] = id
	}
	if _, err := objectKey("", "a"); err == nil {
		t.Fatal("empty task ID accepted")
	}
}

func TestMissing(t *testing.T) {
	ctx := context.Background()
	for _, d := range drivers(t) {
		t.Run(d.name, func(t *testing.T) {
			s := newStore(t)
			upload(t, s, d.spec, "t", "dir/present.txt", "x")
			for _, p := range []string{"absent.txt", "dir/absent.txt", "dir", "dir/present.txt/below"} {
				_, err := s.Stat(ctx, d.spec, "t", p, nil)
				wantType(t, err, ErrFileNotFound, FormatRef("task", p), "upload it first")
				_, err = s.Open(ctx, d.spec, "t", p)
				wantType(t, err, ErrFileNotFound)
				wantType(t, s.Verify(ctx, d.spec, "t", Object{Path: p, SHA256: hexSHA(nil)}), ErrFileNotFound)
			}
		})
	}
}

func TestStoreRefusesBadArguments(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	m := Spec{Root: "task", URL: "mem://"}
	_, err := s.Stat(ctx, m, "t", "../x", nil)
	wantType(t, err, contract.ErrInvalidInput, `".." segments`)
	_, _, err = s.Upload(ctx, m, "t", "a/", "text/plain", strings.NewReader("x"))
	wantType(t, err, contract.ErrInvalidInput, "ends in '/'")
	_, _, err = s.Upload(ctx, m, "t", "a.txt", "", strings.NewReader("x"))
	wantType(t, err, contract.ErrInvalidInput, "mimeType is required")
	_, _, err = s.Upload(ctx, m, "t", "a.txt", "not a type;;", strings.NewReader("x"))
	wantType(t, err, contract.ErrInvalidInput, "not a media type")
	_, err = s.Stat(ctx, Spec{Root: "Task", URL: "mem://"}, "t", "a", nil)
	wantType(t, err, contract.ErrInvalidInput, "lowercase")
	_, err = s.Stat(ctx, Spec{Root: "task", URL: "http://x"}, "t", "a", nil)
	wantType(t, err, contract.ErrInvalidInput, "not supported")
	if _, err := s.Stat(ctx, m, "", "a", nil); err == nil {
		t.Fatal("empty task ID accepted")
	}
	_, err = s.Copy(ctx, m, "t", Object{Path: "a"}, m, "u", "b", nil)
	wantType(t, err, contract.ErrInvalidInput, "Stat it first")
}

func TestCheckSpec(t *testing.T) {
	for _, ok := range []Spec{
		{"task", "file:///var/lib/agent/mount"},
		{"task", "file://localhost/data"},
		{"task", "file://./rel/folder"},
		{"task", "file:///data?metadata=skip"},
		{"task", "mem://"},
		{"task", "mem://name"},
		{"media", "s3://my-bucket?region=eu-west-1"},
		{"task", "gs://my-bucket"},
	} {
		if err := CheckSpec(ok); err != nil {
			t.Errorf("CheckSpec(%+v): %v", ok, err)
		}
	}
	for _, bad := range []struct {
		s    Spec
		want string
	}{
		{Spec{"task", ""}, "empty"},
		{Spec{"task", "/var/data"}, "not a URL"},
		{Spec{"task", "http://host/x"}, "not supported"},
		{Spec{"task", "azblob://c"}, "not supported"},
		{Spec{"task", "file://data/x"}, "three slashes"},
		{Spec{"task", "file:///"}, "names no folder"},
		{Spec{"task", "s3://"}, "names no bucket"},
		{Spec{"task", "gs:///x"}, "names no bucket"},
		{Spec{"task", "s3://u:p@bucket"}, "user info"},
		{Spec{"Task", "mem://"}, "lowercase"},
		{Spec{"", "mem://"}, "lowercase"},
		{Spec{"task", "file://%zz"}, "does not parse"},
	} {
		err := CheckSpec(bad.s)
		if contract.TypeOf(err) != contract.ErrInvalidInput || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("CheckSpec(%+v) = %v, want INVALID_INPUT saying %q", bad.s, err, bad.want)
		}
	}
}

func TestVerifyDetectsChange(t *testing.T) {
	ctx := context.Background()
	for _, d := range drivers(t) {
		t.Run(d.name, func(t *testing.T) {
			s := newStore(t)
			o := upload(t, s, d.spec, "t", "f.bin", "AAAA")
			if d.local {
				// Record it with an mtime in the past, so any rewrite moves it.
				file := filepath.Join(d.dir, "tasks", "t", "files", "f.bin")
				old := time.Now().Add(-time.Hour)
				if err := os.Chtimes(file, old, old); err != nil {
					t.Fatal(err)
				}
				var err error
				if o, err = s.Stat(ctx, d.spec, "t", "f.bin", nil); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Verify(ctx, d.spec, "t", o); err != nil {
				t.Fatal(err)
			}
			// Same size, different content.
			upload(t, s, d.spec, "t", "f.bin", "BBBB")
			wantType(t, s.Verify(ctx, d.spec, "t", o), ErrFileChanged, "task://f.bin changed", "attach it again")
			if d.local {
				wantType(t, s.Verify(ctx, d.spec, "t", o), ErrFileChanged, "modified at")
			} else {
				wantType(t, s.Verify(ctx, d.spec, "t", o), ErrFileChanged, "MD5")
				// Identical bytes rewritten: the MD5 still matches, so it is the same object.
				same := upload(t, s, d.spec, "t", "g.bin", "CCCC")
				upload(t, s, d.spec, "t", "g.bin", "CCCC")
				if err := s.Verify(ctx, d.spec, "t", same); err != nil {
					t.Fatalf("identical rewrite: %v", err)
				}
			}
			// Another size.
			upload(t, s, d.spec, "t", "f.bin", "AAAAA")
			wantType(t, s.Verify(ctx, d.spec, "t", o), ErrFileChanged, "now 5 bytes, it was 4")
			// Without an MD5, the ETag decides; without both, ModTime.
			cur, err := s.Stat(ctx, d.spec, "t", "f.bin", nil)
			if err != nil {
				t.Fatal(err)
			}
			noMD5 := cur
			noMD5.MD5 = ""
			if err := s.Verify(ctx, d.spec, "t", noMD5); err != nil {
				t.Fatalf("by ETag: %v", err)
			}
			noMD5.ETag = "\"other\""
			if d.local {
				// file:// compares ModTime and Size only: the ETag is derived from them.
				if err := s.Verify(ctx, d.spec, "t", noMD5); err != nil {
					t.Fatalf("file:// by ModTime: %v", err)
				}
			} else {
				wantType(t, s.Verify(ctx, d.spec, "t", noMD5), ErrFileChanged, "ETag")
			}
			byTime := cur
			byTime.MD5, byTime.ETag = "", ""
			if err := s.Verify(ctx, d.spec, "t", byTime); err != nil {
				t.Fatalf("by ModTime: %v", err)
			}
			byTime.ModTime = byTime.ModTime.Add(-time.Second)
			wantType(t, s.Verify(ctx, d.spec, "t", byTime), ErrFileChanged, "modified at")
			// Gone.
			if d.local {
				if err := os.Remove(filepath.Join(d.dir, "tasks", "t", "files", "f.bin")); err != nil {
					t.Fatal(err)
				}
			} else {
				m, _ := s.mount(ctx, d.spec)
				if err := m.b.Delete(ctx, "tasks/t/files/f.bin"); err != nil {
					t.Fatal(err)
				}
			}
			wantType(t, s.Verify(ctx, d.spec, "t", cur), ErrFileNotFound)
		})
	}
}

func TestFileMountRefusesLinksOut(t *testing.T) {
	ctx := context.Background()
	root, outside := t.TempDir(), t.TempDir()
	m := Spec{Root: "task", URL: "file://" + filepath.ToSlash(root)}
	s := newStore(t)
	upload(t, s, m, "t", "real.txt", "inside")
	upload(t, s, m, "other", "theirs.txt", "another task's")
	space := filepath.Join(root, "tasks", "t", "files")
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"link.txt":    secret,
		"rel.txt":     "../../../../" + filepath.Base(outside) + "/secret.txt",
		"dirlink":     outside,
		"neighbour":   filepath.Join(root, "tasks", "other", "files", "theirs.txt"),
		"updir":       "..",
		"alias.txt":   "real.txt", // stays inside: fine
		"dangling":    filepath.Join(outside, "nothing"),
		"loop":        "loop",
		"linked/file": secret,
	}
	if err := os.MkdirAll(filepath.Join(space, "linked"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(space, filepath.FromSlash(name))); err != nil {
			t.Fatal(err)
		}
	}
	// rel.txt's target is relative to its folder; make it point at the secret for real.
	if b, err := os.ReadFile(filepath.Join(space, "rel.txt")); err != nil || string(b) != "secret" {
		t.Logf("rel.txt does not reach the secret here (%v); it is still refused or missing", err)
	}
	for _, p := range []string{"link.txt", "rel.txt", "dirlink/secret.txt", "neighbour", "updir/other.txt", "linked/file"} {
		_, err := s.Stat(ctx, m, "t", p, nil)
		if p == "updir/other.txt" {
			wantType(t, err, ErrFileNotFound) // tasks/t/other.txt does not exist
			continue
		}
		if p == "rel.txt" && contract.TypeOf(err) == ErrFileNotFound {
			continue
		}
		wantType(t, err, contract.ErrInvalidInput, "task://"+p+" links out of the task's space", "replace the link")
		_, err = s.Open(ctx, m, "t", p)
		wantType(t, err, contract.ErrInvalidInput, "links out")
		wantType(t, s.Verify(ctx, m, "t", Object{Path: p, Size: 6}), contract.ErrInvalidInput, "links out")
	}
	// A link inside the space is fine.
	o, err := s.Stat(ctx, m, "t", "alias.txt", nil)
	if err != nil || o.SHA256 != hexSHA([]byte("inside")) {
		t.Fatalf("alias inside the space: %+v, %v", o, err)
	}
	for _, p := range []string{"dangling", "loop"} {
		_, err := s.Stat(ctx, m, "t", p, nil)
		if p == "loop" && err != nil && contract.TypeOf(err) == "" {
			continue // "too many links": a storage fault, not a refusal
		}
		wantType(t, err, ErrFileNotFound)
	}
	// Writes through a linked folder are refused and leave nothing outside.
	_, _, err = s.Upload(ctx, m, "t", "dirlink/new.txt", "text/plain", strings.NewReader("x"))
	wantType(t, err, contract.ErrInvalidInput, "links out")
	_, _, err = s.Upload(ctx, m, "t", "dirlink/deeper/new.txt", "text/plain", strings.NewReader("x"))
	wantType(t, err, contract.ErrInvalidInput, "links out")
	upload(t, s, m, "other", "c.txt", "copy me")
	src, _ := s.Stat(ctx, m, "other", "c.txt", nil)
	_, err = s.Copy(ctx, m, "other", src, m, "t", "dirlink/c.txt", nil)
	wantType(t, err, contract.ErrInvalidInput, "links out")
	if ents, _ := os.ReadDir(outside); len(ents) != 1 {
		t.Fatalf("the outside folder holds %d entries, want only the secret", len(ents))
	}
	// Uploading over a link replaces the link, not its target.
	upload(t, s, m, "t", "link.txt", "replaced")
	if b, _ := os.ReadFile(secret); string(b) != "secret" {
		t.Fatalf("the secret became %q", b)
	}
	if got := read(t, s, m, "t", "link.txt"); got != "replaced" {
		t.Fatalf("link.txt reads %q", got)
	}
	// A FIFO is not a regular file (reading it would block).
	if runtime.GOOS != "windows" {
		if err := mkfifo(filepath.Join(space, "fifo")); err == nil {
			_, err := s.Stat(ctx, m, "t", "fifo", nil)
			wantType(t, err, contract.ErrInvalidInput, "not a regular file")
		}
	}
	// Names fileblob reserves.
	_, _, err = s.Upload(ctx, m, "t", "x.attrs", "text/plain", strings.NewReader("x"))
	wantType(t, err, contract.ErrInvalidInput, ".attrs")
	_, err = s.Stat(ctx, m, "t", "x.attrs", nil)
	wantType(t, err, contract.ErrInvalidInput, ".attrs")
}

// fileblob escapes the '/' after a segment ending in ".."; the confinement
// check must find the same file.
func TestFileMountEscapedNames(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	m := Spec{Root: "task", URL: "file://" + filepath.ToSlash(root)}
	s := newStore(t)
	for _, p := range []string{"a../b.txt", "x/.../y", "日本/ü b.txt", "a..b/c"} {
		up := upload(t, s, m, "T.1", p, p)
		o, err := s.Stat(ctx, m, "T.1", p, nil)
		if err != nil || o.SHA256 != up.SHA256 {
			t.Fatalf("Stat %q = %+v, %v", p, o, err)
		}
		if got := read(t, s, m, "T.1", p); got != p {
			t.Fatalf("read %q", got)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "tasks", "%54%2e1", "files", "a..__0x2f__b.txt")); err != nil {
		t.Fatalf("layout: %v", err)
	}
}

func TestUploadAbortPublishesNothing(t *testing.T) {
	ctx := context.Background()
	for _, d := range drivers(t) {
		t.Run(d.name, func(t *testing.T) {
			s := newStore(t)
			boom := errors.New("source broke")
			r := io.MultiReader(strings.NewReader(strings.Repeat("x", 3<<20)), errReader{boom})
			_, _, err := s.Upload(ctx, d.spec, "t", "half.bin", "application/octet-stream", r)
			if !errors.Is(err, boom) {
				t.Fatalf("Upload = %v, want the source error", err)
			}
			_, err = s.Stat(ctx, d.spec, "t", "half.bin", nil)
			wantType(t, err, ErrFileNotFound)
			// A canceled context too.
			cctx, cancel := context.WithCancel(ctx)
			cr := &cancelAfter{r: strings.NewReader(strings.Repeat("y", 3<<20)), n: 1 << 20, cancel: cancel}
			if _, _, err := s.Upload(cctx, d.spec, "t", "half.bin", "application/octet-stream", cr); !errors.Is(err, context.Canceled) {
				t.Fatalf("Upload = %v, want context.Canceled", err)
			}
			_, err = s.Stat(ctx, d.spec, "t", "half.bin", nil)
			wantType(t, err, ErrFileNotFound)
			if d.local {
				noTempFiles(t, d.dir)
			}
		})
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

type cancelAfter struct {
	r      io.Reader
	n      int
	cancel func()
}

func (c *cancelAfter) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	if c.n -= k; c.n <= 0 {
		c.cancel()
	}
	return k, err
}

func noTempFiles(t *testing.T, dir string) {
	t.Helper()
	_ = filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".tmp") {
			t.Errorf("temporary file left: %s", p)
		}
		return nil
	})
}

func TestCopy(t *testing.T) {
	ctx := context.Background()
	ds := drivers(t)
	pairs := []struct {
		name     string
		src, dst driver
	}{
		{"mem", ds[0], ds[0]},
		{"file", ds[1], ds[1]},
		{"mem to file", ds[0], ds[1]},
		{"file to mem", ds[1], ds[0]},
	}
	for i, pc := range pairs {
		t.Run(pc.name, func(t *testing.T) {
			s := newStore(t)
			srcTask, dstTask := "parent", "child"
			if i >= 2 {
				dstTask = "child" + pc.name[:1]
			}
			content := strings.Repeat("0123456789abcdef", 4096) // 64 KiB
			upload(t, s, pc.src.spec, srcTask, "out/video.mp4", content)
			so, err := s.Stat(ctx, pc.src.spec, srcTask, "out/video.mp4", nil)
			if err != nil {
				t.Fatal(err)
			}
			o, err := s.Copy(ctx, pc.src.spec, srcTask, so, pc.dst.spec, dstTask, "in/video.mp4", nil)
			if err != nil {
				t.Fatal(err)
			}
			if o.Path != "in/video.mp4" || o.Size != so.Size || o.SHA256 != so.SHA256 {
				t.Fatalf("Copy = %+v", o)
			}
			if got := read(t, s, pc.dst.spec, dstTask, "in/video.mp4"); got != content {
				t.Fatal("copied content differs")
			}
			st, err := s.Stat(ctx, pc.dst.spec, dstTask, "in/video.mp4", nil)
			if err != nil || st != o {
				t.Fatalf("Stat of the copy = %+v, %v; Copy returned %+v", st, err, o)
			}
			if err := s.Verify(ctx, pc.dst.spec, dstTask, o); err != nil {
				t.Fatal(err)
			}

			// Idempotent: a retry finds the copy and does not rewrite it.
			var fi os.FileInfo
			if pc.dst.local {
				fi, _ = os.Stat(filepath.Join(pc.dst.dir, "tasks", dstTask, "files", "in", "video.mp4"))
			}
			again, err := s.Copy(ctx, pc.src.spec, srcTask, so, pc.dst.spec, dstTask, "in/video.mp4", nil)
			if err != nil || again != o {
				t.Fatalf("second Copy = %+v, %v; first %+v", again, err, o)
			}
			if pc.dst.local {
				fi2, _ := os.Stat(filepath.Join(pc.dst.dir, "tasks", dstTask, "files", "in", "video.mp4"))
				if !os.SameFile(fi, fi2) || !fi.ModTime().Equal(fi2.ModTime()) {
					t.Fatal("the second Copy rewrote the file")
				}
			}
			// Even when the source is gone meanwhile (the retry has nothing to read).
			if err := deleteObject(ctx, s, pc.src, srcTask, "out/video.mp4"); err != nil {
				t.Fatal(err)
			}
			if again, err := s.Copy(ctx, pc.src.spec, srcTask, so, pc.dst.spec, dstTask, "in/video.mp4", nil); err != nil || again != o {
				t.Fatalf("Copy after the source went = %+v, %v", again, err)
			}
			// ...but a copy to a new place needs the source.
			_, err = s.Copy(ctx, pc.src.spec, srcTask, so, pc.dst.spec, dstTask, "in/other.mp4", nil)
			wantType(t, err, ErrFileNotFound, "task://out/video.mp4")

			// A changed source is caught by its attributes before copying.
			upload(t, s, pc.src.spec, srcTask, "out/video.mp4", strings.ToUpper(content))
			_, err = s.Copy(ctx, pc.src.spec, srcTask, so, pc.dst.spec, dstTask, "in/new.mp4", nil)
			wantType(t, err, ErrFileChanged, "task://out/video.mp4 changed")
			_, err = s.Stat(ctx, pc.dst.spec, dstTask, "in/new.mp4", nil)
			wantType(t, err, ErrFileNotFound)

			// The hash is checked while copying: content that does not match the
			// recorded sha256 is not published.
			cur, err := s.Stat(ctx, pc.src.spec, srcTask, "out/video.mp4", nil)
			if err != nil {
				t.Fatal(err)
			}
			lie := cur
			lie.SHA256 = so.SHA256 // the attributes verify; the bytes do not hash to it
			_, err = s.Copy(ctx, pc.src.spec, srcTask, lie, pc.dst.spec, dstTask, "in/bad.mp4", nil)
			wantType(t, err, ErrFileChanged, "sha256")
			_, err = s.Stat(ctx, pc.dst.spec, dstTask, "in/bad.mp4", nil)
			wantType(t, err, ErrFileNotFound)
			// Over an existing destination: it keeps what it had.
			zs := strings.Repeat("z", len(content))
			upload(t, s, pc.dst.spec, dstTask, "in/x.mp4", zs)
			_, err = s.Copy(ctx, pc.src.spec, srcTask, lie, pc.dst.spec, dstTask, "in/x.mp4", nil)
			wantType(t, err, ErrFileChanged)
			if got := read(t, s, pc.dst.spec, dstTask, "in/x.mp4"); got != zs {
				t.Fatal("a failed copy changed the destination")
			}
			if pc.dst.local {
				noTempFiles(t, pc.dst.dir)
			}

			// A different object at the destination is replaced.
			o2, err := s.Copy(ctx, pc.src.spec, srcTask, cur, pc.dst.spec, dstTask, "in/x.mp4", nil)
			if err != nil || o2.SHA256 != cur.SHA256 {
				t.Fatalf("Copy over another object = %+v, %v", o2, err)
			}
			if got := read(t, s, pc.dst.spec, dstTask, "in/x.mp4"); got != strings.ToUpper(content) {
				t.Fatal("the destination was not replaced")
			}
		})
	}
}

func deleteObject(ctx context.Context, s *Store, d driver, task, path string) error {
	m, err := s.mount(ctx, d.spec)
	if err != nil {
		return err
	}
	key, _ := objectKey(task, path)
	return m.b.Delete(ctx, key)
}

// A retried Copy to an object store trusts the sha256 it wrote into the
// object's metadata; on file:// it re-hashes.
func TestCopyRetryReadsNothingOnObjectStores(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	m := Spec{Root: "task", URL: "mem://"}
	upload(t, s, m, "a", "f", strings.Repeat("q", 20<<20))
	so, err := s.Stat(ctx, m, "a", "f", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Copy(ctx, m, "a", so, m, "b", "f", nil); err != nil {
		t.Fatal(err)
	}
	var beats []int64
	if _, err := s.Copy(ctx, m, "a", so, m, "b", "f", func(n int64) { beats = append(beats, n) }); err != nil {
		t.Fatal(err)
	}
	if len(beats) != 0 {
		t.Fatalf("the retry read %v bytes", beats)
	}
}

// patternReader yields n deterministic bytes without holding them.
type patternReader struct{ n, off int64 }

func (p *patternReader) Read(b []byte) (int, error) {
	if p.off >= p.n {
		return 0, io.EOF
	}
	if rem := p.n - p.off; int64(len(b)) > rem {
		b = b[:rem]
	}
	for i := range b {
		x := p.off + int64(i)
		b[i] = byte(x ^ x>>8 ^ x>>16)
	}
	p.off += int64(len(b))
	return len(b), nil
}

func TestCopyLargeObjectStreams(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	m := Spec{Root: "task", URL: "file://" + filepath.ToSlash(root)}
	other := Spec{Root: "task", URL: "file://" + filepath.ToSlash(t.TempDir())}
	s := newStore(t)
	const size = 64 << 20

	base := heapInuse()
	var peak atomic.Uint64
	sample := func() {
		if h := heapInuse(); h > peak.Load() {
			peak.Store(h)
		}
	}
	if _, _, err := s.Upload(ctx, m, "parent", "big.bin", "video/mp4", &patternReader{n: size}); err != nil {
		t.Fatal(err)
	}
	sample()
	var statBeats []int64
	so, err := s.Stat(ctx, m, "parent", "big.bin", func(n int64) { statBeats = append(statBeats, n); sample() })
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	_, _ = io.Copy(h, &patternReader{n: size})
	if so.Size != size || so.SHA256 != hex.EncodeToString(h.Sum(nil)) {
		t.Fatalf("Stat = %+v", so)
	}
	var copyBeats []int64
	o, err := s.Copy(ctx, m, "parent", so, other, "child", "big.bin", func(n int64) { copyBeats = append(copyBeats, n); sample() })
	if err != nil {
		t.Fatal(err)
	}
	sample()
	if o.SHA256 != so.SHA256 || o.Size != size {
		t.Fatalf("Copy = %+v", o)
	}
	growth := int64(peak.Load()) - int64(base)
	t.Logf("heap in use: base %d MiB, peak growth %d KiB; heartbeats: stat %d, copy %d", base>>20, growth>>10, len(statBeats), len(copyBeats))
	if growth > 16<<20 {
		t.Fatalf("heap grew by %d MiB while moving 64 MiB", growth>>20)
	}
	for name, beats := range map[string][]int64{"Stat": statBeats, "Copy": copyBeats} {
		if len(beats) < size/heartbeatBytes {
			t.Fatalf("%s heartbeats %v: want one at least every 8 MiB", name, beats)
		}
		for i := 1; i < len(beats); i++ {
			if beats[i] < beats[i-1] || beats[i]-beats[i-1] > heartbeatBytes+copyBuffer {
				t.Fatalf("%s heartbeats %v: gap over 8 MiB", name, beats)
			}
		}
		if last := beats[len(beats)-1]; size-last > heartbeatBytes {
			t.Fatalf("%s heartbeats end at %d of %d", name, last, size)
		}
	}
}

func heapInuse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

func TestProgressTicks(t *testing.T) {
	var mu sync.Mutex
	var got []int64
	p := newProgress(func(n int64) { mu.Lock(); got = append(got, n); mu.Unlock() }, 10*time.Millisecond)
	p.add(100)
	time.Sleep(60 * time.Millisecond) // no bytes: the ticker still reports
	p.add(heartbeatBytes)             // a full 8 MiB: reported at once
	p.end()
	mu.Lock()
	defer mu.Unlock()
	if len(got) < 3 || got[0] != 100 || got[len(got)-1] != 100+heartbeatBytes {
		t.Fatalf("reports %v", got)
	}
	n := len(got)
	time.Sleep(30 * time.Millisecond)
	if len(got) != n {
		t.Fatal("reports after end")
	}
	startProgress(nil).add(1) // no callback: no-op
	startProgress(nil).end()
}

func TestStoreConcurrentUse(t *testing.T) {
	ctx := context.Background()
	s := NewStore()
	ds := drivers(t)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := ds[i%2]
			task := []string{"a", "b", "c", "d"}[i%4]
			data := bytes.Repeat([]byte{byte(i)}, 1000+i)
			_, up, err := s.Upload(ctx, d.spec, task, "f"+string(rune('a'+i)), "application/octet-stream", bytes.NewReader(data))
			if err != nil {
				errs <- err
				return
			}
			o, err := s.Stat(ctx, d.spec, task, up.Path, nil)
			if err != nil || o.SHA256 != hexSHA(data) {
				errs <- errors.Join(err, errors.New("stat mismatch"))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if len(s.buckets) != 2 {
		t.Errorf("%d buckets open, want one per URL", len(s.buckets))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Stat(ctx, ds[0].spec, "a", "fa", nil); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("Stat after Close = %v", err)
	}
}
