package mount

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"gocloud.dev/blob"

	"github.com/agenttask/agenttask/contract"
)

// Local (file://) mounts: fileblob resolves keys on the file system and
// follows symbolic links, so a link placed in a task's space (by a tool that
// unpacked an archive, say) could expose any file the worker can read. Every
// file:// operation is therefore tied to the task's space by an os.Root
// opened on the space folder, which follows links only while they stay
// inside it (relative links that never climb above the space; an absolute
// link counts as leading out, wherever it points):
//
//   - reads: the object is resolved through the Root (refused if it leads
//     out of the space, is missing or is not a regular file), and the file
//     fileblob stats or opens must be that same file (os.SameFile), so a
//     link swapped in meanwhile fails the read instead of being followed;
//   - writes: the folders on the way are created through the Root, and the
//     temporary file fileblob writes must lie in them;
//   - deletes go through the Root.
//
// The bytes themselves still move through the bucket, so a wrapped bucket
// (faultblob's outages) sees every read and write.

// localMount is what a file:// mount's confinement needs of its bucket.
type localMount struct {
	dir       string      // the bucket's absolute folder
	dirMode   os.FileMode // fileblob's dir_file_mode: folders are created with it
	tmpBeside bool        // fileblob's no_tmp_dir: temporary files beside the target
}

// newLocalMount reads the folder and fileblob's parameters from the URL the
// bucket was opened with, as fileblob's URL opener does.
func newLocalMount(u *url.URL, openURL string) (*localMount, error) {
	dir, err := localDir(u)
	if err != nil {
		return nil, err
	}
	ou, err := url.Parse(openURL)
	if err != nil {
		return nil, err
	}
	q := ou.Query()
	lm := &localMount{dir: dir, dirMode: 0o777, tmpBeside: q.Get("no_tmp_dir") != ""}
	if s := q.Get("dir_file_mode"); s != "" {
		if n, err := strconv.ParseUint(s, 10, 32); err == nil && n != 0 {
			lm.dirMode = os.FileMode(n)
		}
	}
	return lm, nil
}

// localDir is the absolute folder of a file:// bucket URL, computed as
// fileblob's URL opener does.
func localDir(u *url.URL) (string, error) {
	p := u.Path
	if u.Host == "." || os.PathSeparator != '/' {
		p = strings.TrimPrefix(p, "/")
	}
	return filepath.Abs(filepath.FromSlash(p))
}

// escapeKey mirrors fileblob's key escaping (gocloud.dev v0.44.0,
// fileblob.escapeKey). Of its escapes only one can apply to checked paths:
// the '/' after a segment ending in ".." (as in "a../b") is written
// "__0x2f__". Every read compares the file found this way with the file
// fileblob opened (os.SameFile), so a drift fails loudly.
func escapeKey(key string) string {
	r := []rune(key)
	var b strings.Builder
	for i, c := range r {
		esc := c < 32 ||
			os.PathSeparator != '/' && c == os.PathSeparator ||
			i > 1 && c == '/' && r[i-1] == '.' && r[i-2] == '.' ||
			i > 0 && c == '/' && r[i-1] == '/' ||
			c == '/' && i == len(r)-1 ||
			os.PathSeparator == '\\' && strings.ContainsRune(`<>:"|?*`, c)
		if esc {
			fmt.Fprintf(&b, "__%#x__", c)
		} else {
			b.WriteRune(c)
		}
	}
	return b.String()
}

// attrsSuffix: fileblob refuses keys whose file ends in it (its sidecar files).
const attrsSuffix = ".attrs"

func isMissing(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// localFile is an object of a file:// mount on the file system.
type localFile struct {
	mnt   *localMount
	space string // the task's space folder
	name  string // the object's file inside it, as fileblob names it
	ref   string // for messages
}

// file locates the object with blob key key in the task's space.
func (lm *localMount) file(taskID, key, ref string) (*localFile, error) {
	pre, err := spacePrefix(taskID)
	if err != nil {
		return nil, err
	}
	// The prefix holds nothing fileblob escapes ([a-z0-9_%/-]), so the
	// object's name is what follows it in the escaped key.
	name := strings.TrimPrefix(escapeKey(key), pre)
	return &localFile{
		mnt:   lm,
		space: filepath.Join(lm.dir, filepath.FromSlash(pre)),
		name:  filepath.FromSlash(name),
		ref:   ref,
	}, nil
}

// errLeavesSpace marks a name the space's Root refused: following it leads
// out of the task's space.
var errLeavesSpace = errors.New("leads out of the task's space")

// escaped reports whether err is r's refusal of a name that leads out of it.
// os does not export that error, so it is compared with the one r gives for
// "..", which r refuses without touching the file system.
func escaped(r *os.Root, err error) bool {
	_, probe := r.Lstat("..")
	var pe *os.PathError
	return errors.As(probe, &pe) && errors.Is(err, pe.Err)
}

// stat resolves the file through a Root on the space.
func (f *localFile) stat() (os.FileInfo, error) {
	r, err := os.OpenRoot(f.space)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	fi, err := r.Stat(f.name)
	if err != nil && escaped(r, err) {
		return nil, fmt.Errorf("%w: %w", errLeavesSpace, err)
	}
	return fi, err
}

// checkRead refuses an object whose name leads out of the task's space, or
// that is not a regular file. A missing object (or a dangling link) is
// FILE_NOT_FOUND.
func (f *localFile) checkRead() error {
	if strings.HasSuffix(f.name, attrsSuffix) {
		return reservedName(f.ref)
	}
	fi, err := f.stat()
	switch {
	case err == nil:
	case isMissing(err):
		return notFound(f.ref, "")
	case errors.Is(err, errLeavesSpace):
		// A name that names nothing is missing, wherever its link points:
		// the existence check reads no content, it only picks the refusal.
		if _, err := os.Stat(filepath.Join(f.space, f.name)); isMissing(err) {
			return notFound(f.ref, "")
		}
		return contract.Invalid("%s links out of the task's space (a symbolic link to a location outside it, or an absolute one: links must be relative and stay inside); only files inside the space can be used: replace the link with a copy of the file", f.ref)
	default:
		return fmt.Errorf("mount: %s: %w", f.ref, err)
	}
	if fi.IsDir() {
		return notFound(f.ref, "that name is a folder")
	}
	if !fi.Mode().IsRegular() {
		return contract.Invalid("%s is not a regular file (%s); only regular files can be used", f.ref, fi.Mode().Type())
	}
	return nil
}

// checkWrite refuses a write whose folder leads out of the task's space (a
// folder in the space that is a link to elsewhere).
func (f *localFile) checkWrite() error {
	if strings.HasSuffix(f.name, attrsSuffix) {
		return reservedName(f.ref)
	}
	dir := filepath.Dir(f.name)
	if dir == "." {
		return nil
	}
	r, err := os.OpenRoot(f.space)
	if isMissing(err) {
		return nil // the space does not exist yet: nothing in it can link out
	}
	if err != nil {
		return fmt.Errorf("mount: %s: task space: %w", f.ref, err)
	}
	defer r.Close()
	switch _, err := r.Stat(dir); {
	case err == nil, isMissing(err):
		return nil // a missing folder is created by the write, through the Root
	case escaped(r, err):
		return folderLinksOut(f.ref)
	default:
		return fmt.Errorf("mount: %s: %w", f.ref, err)
	}
}

func reservedName(ref string) error {
	return contract.Invalid("%s: names ending in %q are reserved by the local file store of this mount; use another name", ref, attrsSuffix)
}

func folderLinksOut(ref string) error {
	return contract.Invalid("%s: a folder on its path links out of the task's space (a symbolic link to a location outside it, or an absolute one: links must be relative and stay inside); write it under another name", ref)
}

// errNotInSpace: the file fileblob opened is not the one the space's Root
// resolves the name to.
var errNotInSpace = errors.New("the file the store opened is not the one in the task's space (it was replaced, or a link on its path changed, while it was opened; or fileblob's key escaping differs from this package's)")

// same checks that fi (of the file fileblob stats or opened) is the file the
// space's Root resolves the name to now.
func (f *localFile) same(fi os.FileInfo) error {
	if cur, err := f.stat(); err != nil || !os.SameFile(fi, cur) {
		return errNotInSpace
	}
	return nil
}

// sameAttrs checks fileblob's attributes of the object with same.
func (f *localFile) sameAttrs(a *blob.Attributes) error {
	var fi os.FileInfo
	if !a.As(&fi) {
		return nil // a wrapper that does not pass fileblob's FileInfo on
	}
	if err := f.same(fi); err != nil {
		return fmt.Errorf("mount: %s: %w", f.ref, err)
	}
	return nil
}

// beforeRead is the reader hook: fileblob hands over the file it opened,
// which must be the object in the space. On a refusal fileblob returns
// without closing the file, so the hook closes it.
func (f *localFile) beforeRead(as func(any) bool) error {
	var file *os.File
	if !as(&file) {
		return errors.New("internal: the local store's reader has no file to check")
	}
	fi, err := file.Stat()
	if err == nil {
		err = f.same(fi)
	}
	if err != nil {
		_ = file.Close()
	}
	return err
}

// makeFolders creates the folders on the way to the file through the
// space's Root, so none is created through a link, before fileblob (which
// then finds them) writes.
func (f *localFile) makeFolders() error {
	if err := os.MkdirAll(f.space, f.mnt.dirMode); err != nil {
		return fmt.Errorf("mount: %s: task space: %w", f.ref, err)
	}
	dir := filepath.Dir(f.name)
	if dir == "." {
		return nil
	}
	r, err := os.OpenRoot(f.space)
	if err != nil {
		return fmt.Errorf("mount: %s: task space: %w", f.ref, err)
	}
	defer r.Close()
	if err := r.MkdirAll(dir, f.mnt.dirMode); err != nil {
		if escaped(r, err) {
			return folderLinksOut(f.ref)
		}
		return fmt.Errorf("mount: %s: write: %w", f.ref, err)
	}
	return nil
}

// beforeWrite is the writer hook: the temporary file fileblob created must
// lie in the object's folder in the space. (With temporary files in the
// system's temp folder, no_tmp_dir unset, there is nothing to check: the
// rename then publishes the file into the folders makeFolders made.) On a
// refusal fileblob returns without closing or removing the file, so the hook
// does both.
func (f *localFile) beforeWrite(as func(any) bool) error {
	if !f.mnt.tmpBeside {
		return nil
	}
	var tmp *os.File
	if !as(&tmp) {
		return errors.New("internal: the local store's writer has no file to check")
	}
	if err := f.holds(tmp); err != nil {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
		return err
	}
	return nil
}

// holds checks that tmp lies in the object's folder in the space.
func (f *localFile) holds(tmp *os.File) error {
	fi, err := tmp.Stat()
	if err != nil {
		return err
	}
	r, err := os.OpenRoot(f.space)
	if err != nil {
		return err
	}
	defer r.Close()
	cur, err := r.Lstat(filepath.Join(filepath.Dir(f.name), filepath.Base(tmp.Name())))
	if err != nil || !os.SameFile(fi, cur) {
		return errors.New("the folder it is written to is not the one in the task's space (a link on its path changed while it was opened); write it again")
	}
	return nil
}

// remove deletes the object (and a metadata sidecar, if any) through the
// space's Root, as fileblob's Delete does by path.
func (f *localFile) remove() error {
	r, err := os.OpenRoot(f.space)
	if err != nil {
		return err
	}
	defer r.Close()
	if err := r.Remove(f.name); err != nil {
		return err
	}
	if err := r.Remove(f.name + attrsSuffix); err != nil && !isMissing(err) {
		return err
	}
	return nil
}
