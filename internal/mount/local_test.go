package mount

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agenttask/agenttask/contract"
)

// localFixture is a task's space of a file:// mount with a folder "out"
// that links to a folder outside the mount.
func localFixture(t *testing.T) (lm *localMount, space, outside string) {
	t.Helper()
	root, outside := t.TempDir(), t.TempDir()
	lm = &localMount{dir: root, dirMode: 0o777, tmpBeside: true}
	space = filepath.Join(root, "tasks", "t", "files")
	if err := os.MkdirAll(space, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(space, "out")); err != nil {
		t.Fatal(err)
	}
	return lm, space, outside
}

func fileOf(t *testing.T, lm *localMount, path string) *localFile {
	t.Helper()
	key, err := objectKey("t", path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := lm.file("t", key, FormatRef("task", path))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// asFile is the As function fileblob hands to its read and write hooks.
func asFile(f *os.File) func(any) bool {
	return func(i any) bool {
		p, ok := i.(**os.File)
		if ok {
			*p = f
		}
		return ok
	}
}

// A file fileblob opened that is not the one the space's Root resolves the
// name to (a link swapped after the check) is refused, and closed.
func TestLocalReadMustOpenTheFileInTheSpace(t *testing.T) {
	lm, space, outside := localFixture(t)
	if err := os.WriteFile(filepath.Join(space, "a.txt"), []byte("inside"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := fileOf(t, lm, "a.txt")
	if err := f.checkRead(); err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(filepath.Join(space, "a.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if err := f.beforeRead(asFile(in)); err != nil {
		t.Fatalf("the file in the space: %v", err)
	}
	secret, err := os.Open(filepath.Join(outside, "secret"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.beforeRead(asFile(secret)); !errors.Is(err, errNotInSpace) {
		t.Fatalf("a file outside: %v, want errNotInSpace", err)
	}
	if _, err := secret.Read(make([]byte, 1)); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("the refused file is still open (%v)", err)
	}
}

// Folders are made through the space's Root: none is made through a link,
// and a temporary file that is not in the object's folder is refused and
// removed.
func TestLocalWriteStaysInTheSpace(t *testing.T) {
	lm, space, outside := localFixture(t)
	f := fileOf(t, lm, "out/deeper/new.txt")
	wantType(t, f.checkWrite(), contract.ErrInvalidInput, "links out")
	wantType(t, f.makeFolders(), contract.ErrInvalidInput, "links out")
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatalf("the outside folder holds %d entries, want none", len(ents))
	}

	g := fileOf(t, lm, "in/deeper/new.txt")
	if err := g.checkWrite(); err != nil {
		t.Fatal(err)
	}
	if err := g.makeFolders(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(filepath.Join(space, "in", "deeper")); err != nil || !fi.IsDir() {
		t.Fatalf("folders not made: %v", err)
	}
	good, err := os.Create(filepath.Join(space, "in", "deeper", "new.txt.1.tmp"))
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()
	if err := g.beforeWrite(asFile(good)); err != nil {
		t.Fatalf("a temporary file in the folder: %v", err)
	}
	stray := filepath.Join(outside, "new.txt.2.tmp")
	bad, err := os.Create(stray)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.beforeWrite(asFile(bad)); err == nil {
		t.Fatal("a temporary file outside the space was accepted")
	}
	if _, err := os.Lstat(stray); !os.IsNotExist(err) {
		t.Fatalf("the refused temporary file is still there (%v)", err)
	}
}

// Deleting goes through the space's Root: never through a linked folder.
func TestLocalRemoveStaysInTheSpace(t *testing.T) {
	lm, space, outside := localFixture(t)
	if err := os.WriteFile(filepath.Join(outside, "x"), []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := fileOf(t, lm, "out/x").remove(); err == nil {
		t.Fatal("removed through a link out")
	}
	if _, err := os.Stat(filepath.Join(outside, "x")); err != nil {
		t.Fatalf("the outside file: %v", err)
	}
	if err := os.WriteFile(filepath.Join(space, "y"), []byte("drop"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := fileOf(t, lm, "y").remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(space, "y")); !os.IsNotExist(err) {
		t.Fatalf("y still there (%v)", err)
	}
}
