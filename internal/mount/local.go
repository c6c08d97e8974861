package mount

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/agenttask/agenttask/contract"
)

// Local (file://) mounts: fileblob resolves keys on the file system and
// follows symbolic links, so a link placed in a task's space (by a tool that
// unpacked an archive, say) could expose any file the worker can read. Every
// operation on a file:// mount therefore resolves the object's real path
// first and refuses it unless it stays inside the task's space. The check
// guards against links lying in the space; it does not make the folder safe
// against a concurrent writer that swaps links while an operation runs.

// localDir is the absolute folder of a file:// bucket URL, computed as
// fileblob's URL opener does.
func localDir(u *url.URL) (string, error) {
	p := u.Path
	if u.Host == "." || os.PathSeparator != '/' {
		p = strings.TrimPrefix(p, "/")
	}
	return filepath.Abs(filepath.FromSlash(p))
}

// localPath is the file fileblob keeps key in, mirroring fileblob's key
// escaping (gocloud.dev v0.44.0, fileblob.escapeKey). Of its escapes only one
// can apply to checked paths: the '/' after a segment ending in ".." (as in
// "a../b") is written "__0x2f__". Stat cross-checks the result against the
// file fileblob opened (os.SameFile), so a drift fails loudly.
func localPath(dir, key string) string {
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
	return filepath.Join(dir, filepath.FromSlash(b.String()))
}

// attrsSuffix: fileblob refuses keys whose file ends in it (its sidecar files).
const attrsSuffix = ".attrs"

// inside reports whether p lies strictly below dir (both cleaned, absolute).
func inside(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != "." && rel != ".." && !filepath.IsAbs(rel) &&
		!strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

func isMissing(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// localSpace returns the task's space folder and the object's file.
func localSpace(dir, taskID, path string) (space, file string, err error) {
	pre, err := spacePrefix(taskID)
	if err != nil {
		return "", "", err
	}
	return filepath.Join(dir, filepath.FromSlash(pre)), localPath(dir, pre+path), nil
}

// checkLocalRead refuses an object of a file:// mount whose real path leaves
// the task's space, or that is not a regular file. A missing object (or a
// dangling link) is FILE_NOT_FOUND.
func checkLocalRead(dir, taskID, path, ref string) (file string, err error) {
	space, file, err := localSpace(dir, taskID, path)
	if err != nil {
		return "", err
	}
	if strings.HasSuffix(file, attrsSuffix) {
		return "", contract.Invalid("%s: names ending in %q are reserved by the local file store of this mount; use another name", ref, attrsSuffix)
	}
	real, err := filepath.EvalSymlinks(file)
	if err != nil {
		if isMissing(err) {
			return "", notFound(ref, "")
		}
		return "", fmt.Errorf("mount: %s: %w", ref, err)
	}
	realSpace, err := filepath.EvalSymlinks(space)
	if err != nil {
		return "", fmt.Errorf("mount: %s: task space: %w", ref, err)
	}
	if !inside(realSpace, real) {
		return "", contract.Invalid("%s links out of the task's space (a symbolic link to a location outside it); only files inside the space can be used: replace the link with a copy of the file", ref)
	}
	fi, err := os.Stat(real)
	if err != nil {
		if isMissing(err) {
			return "", notFound(ref, "")
		}
		return "", fmt.Errorf("mount: %s: %w", ref, err)
	}
	if fi.IsDir() {
		return "", notFound(ref, "that name is a folder")
	}
	if !fi.Mode().IsRegular() {
		return "", contract.Invalid("%s is not a regular file (%s); only regular files can be used", ref, fi.Mode().Type())
	}
	return file, nil
}

// checkLocalWrite refuses a write whose folder would resolve outside the
// task's space (a folder in the space that is a link to elsewhere).
func checkLocalWrite(dir, taskID, path, ref string) error {
	space, file, err := localSpace(dir, taskID, path)
	if err != nil {
		return err
	}
	if strings.HasSuffix(file, attrsSuffix) {
		return contract.Invalid("%s: names ending in %q are reserved by the local file store of this mount; use another name", ref, attrsSuffix)
	}
	// The deepest folder on the way that exists already.
	d := filepath.Dir(file)
	for {
		_, err := os.Lstat(d)
		if err == nil {
			break
		}
		if !isMissing(err) {
			return fmt.Errorf("mount: %s: %w", ref, err)
		}
		parent := filepath.Dir(d)
		if parent == d {
			return nil
		}
		d = parent
	}
	if d != space && !inside(space, d) {
		return nil // the space does not exist yet: nothing in it can link out
	}
	realSpace, err := filepath.EvalSymlinks(space)
	if err != nil {
		return fmt.Errorf("mount: %s: task space: %w", ref, err)
	}
	real, err := filepath.EvalSymlinks(d)
	if err != nil {
		return fmt.Errorf("mount: %s: %w", ref, err)
	}
	if real != realSpace && !inside(realSpace, real) {
		return contract.Invalid("%s: a folder on its path links out of the task's space (a symbolic link to a location outside it); write it under another name", ref)
	}
	return nil
}
