package cleanup

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/mount"
	"github.com/agenttask/agenttask/internal/transcript"
)

const marker = "purge-marker-7c1f"

// seed writes, for task id, two transcripts (two first runs, one a
// continuation with a link), a stash and files in the task's space.
func seed(t *testing.T, ctx context.Context, tr *transcript.Store, files *mount.Store, spec mount.Spec, id string, nFiles int) {
	t.Helper()
	k1 := transcript.Key{TaskID: id, FirstRunID: "run1"}
	k2 := transcript.Key{TaskID: id, FirstRunID: "run2", From: 1, Parent: &transcript.Link{TaskID: id, FirstRunID: "run1"}}
	msg := contract.Message{Type: "input", TaskIO: contract.TaskIO{Message: []contract.ContentPart{contract.TextPart(marker + " " + id)}}}
	if err := tr.Write(ctx, k1, 0, []contract.Message{msg, msg}); err != nil {
		t.Fatal(err)
	}
	if err := tr.WriteLink(ctx, k2); err != nil {
		t.Fatal(err)
	}
	if err := tr.Write(ctx, k2, 1, []contract.Message{msg}); err != nil {
		t.Fatal(err)
	}
	if err := tr.PutJSON(ctx, k1, "state", map[string]string{"text": marker}); err != nil {
		t.Fatal(err)
	}
	for i := range nFiles {
		p := "dir/f" + string(rune('a'+i%26)) + strings.Repeat("x", i/26) + ".txt"
		if _, _, err := files.Upload(ctx, spec, id, p, "text/plain", strings.NewReader(marker)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestPurgeRemovesEveryObjectOfTheTaskOnly(t *testing.T) {
	for _, kind := range []string{"mem", "file"} {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			trURL, mountURL := "mem://", "mem://"
			dir := t.TempDir()
			if kind == "file" {
				trURL = "file://" + filepath.Join(dir, "transcripts")
				mountURL = "file://" + filepath.Join(dir, "files")
			}
			tr, err := transcript.Open(ctx, trURL)
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			files := mount.NewStore()
			defer files.Close()
			spec := mount.Spec{Root: "task", URL: mountURL}
			// More files than a page, to page through the listing; a task
			// whose ID extends this one's must keep its objects.
			seed(t, ctx, tr, files, spec, "run-a", purgePage+3)
			seed(t, ctx, tr, files, spec, "run-ab", 1)
			st := Storage{Transcript: tr, Files: files, Mounts: mount.Mounts{"files": mountURL}}

			got, err := st.Purge(ctx, "run-a")
			if err != nil {
				t.Fatal(err)
			}
			// 3 entries, a link, a stash, the record of run2 continuing run1
			want := PurgeResult{TranscriptObjects: 6, Files: purgePage + 3}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("purge: %+v, want %+v", got, want)
			}
			again, err := st.Purge(ctx, "run-a")
			if err != nil || !reflect.DeepEqual(again, PurgeResult{}) {
				t.Fatalf("second purge: %+v, %v; want zero counts and no error", again, err)
			}
			k := transcript.Key{TaskID: "run-a", FirstRunID: "run1"}
			if _, err := tr.Read(ctx, k, 0, 1); err == nil {
				t.Fatal("an entry of the purged task is still read")
			}
			if _, err := files.Stat(ctx, spec, "run-a", "dir/fa.txt", nil); contract.TypeOf(err) != mount.ErrFileNotFound {
				t.Fatalf("a purged file: %v, want FILE_NOT_FOUND", err)
			}
			// The other task is whole.
			if m, err := tr.Read(ctx, transcript.Key{TaskID: "run-ab", FirstRunID: "run1"}, 0, 2); err != nil || len(m) != 2 {
				t.Fatalf("the other task's entries: %d, %v", len(m), err)
			}
			if _, err := files.Stat(ctx, spec, "run-ab", "dir/fa.txt", nil); err != nil {
				t.Fatalf("the other task's file: %v", err)
			}
			if kind == "file" {
				// Nothing of run-a is left on disk, folders included.
				_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
					if err != nil {
						return err
					}
					if strings.Contains(p, string(filepath.Separator)+"run-a"+string(filepath.Separator)) || strings.HasSuffix(p, string(filepath.Separator)+"run-a") {
						if d.IsDir() && p == filepath.Join(dir, "transcripts", "tasks", "run-a") {
							return nil // fileblob leaves emptied folders of the transcript
						}
						if !d.IsDir() {
							t.Errorf("left on disk: %s", p)
						}
					}
					return nil
				})
				if _, err := os.Stat(filepath.Join(dir, "files", "tasks", "run-a")); !os.IsNotExist(err) {
					t.Errorf("the task's folder in the mount is still there: %v", err)
				}
			}
		})
	}
}

func TestPurgeNeedsATaskID(t *testing.T) {
	a := &Activities{}
	if _, err := a.PurgeTaskObjects(context.Background(), PurgeInput{}); err == nil || !strings.Contains(err.Error(), "taskId is empty") {
		t.Fatalf("empty task ID: %v", err)
	}
}

// A purge cut off midway (its worker stopped after the first page of
// files) leaves the rest; the retry, starting from the counts the first
// attempt heartbeated, removes what is left and reports the whole.
func TestAnInterruptedPurgeFinishesOnRetry(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	trURL, mountURL := "file://"+filepath.Join(dir, "transcripts"), "file://"+filepath.Join(dir, "files")
	tr, err := transcript.Open(ctx, trURL)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	files := mount.NewStore()
	defer files.Close()
	spec := mount.Spec{Root: "task", URL: mountURL}
	seed(t, ctx, tr, files, spec, "run-cut", purgePage+3)
	st := Storage{Transcript: tr, Files: files, Mounts: mount.Mounts{"files": mountURL}}

	// The first attempt: the transcript's page, then one page of files,
	// then its context ends (a worker stopping).
	cut, stop := context.WithCancel(ctx)
	beats := 0
	first, err := st.purge(cut, "run-cut", PurgeResult{}, func() {
		if beats++; beats == 2 {
			stop()
		}
	})
	if err == nil {
		t.Fatalf("the cut purge succeeded: %+v", first)
	}
	if first.TranscriptObjects != 6 || first.Files != purgePage {
		t.Fatalf("the cut purge removed %+v, want the transcript's 6 objects and one page of %d files", first, purgePage)
	}
	if _, err := files.Stat(ctx, spec, "run-cut", "dir/fa.txt", nil); err != nil && contract.TypeOf(err) != mount.ErrFileNotFound {
		t.Fatal(err)
	}
	left := 0
	_ = filepath.WalkDir(filepath.Join(dir, "files"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.Contains(p, "run-cut") {
			left++
		}
		return nil
	})
	if left != 3 {
		t.Fatalf("%d files left after the cut, want 3", left)
	}

	// The retry starts from the heartbeated counts.
	again, err := st.purge(ctx, "run-cut", first, func() {})
	if err != nil {
		t.Fatal(err)
	}
	if want := (PurgeResult{TranscriptObjects: 6, Files: purgePage + 3}); !reflect.DeepEqual(again, want) {
		t.Fatalf("after the retry: %+v, want %+v", again, want)
	}
	if n, err := st.Purge(ctx, "run-cut"); err != nil || !reflect.DeepEqual(n, PurgeResult{}) {
		t.Fatalf("a third purge: %+v, %v", n, err)
	}
}
