package transcript

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"gocloud.dev/blob"

	"github.com/agenttask/agenttask/internal/blobkey"
)

// Listing the store, for what outlives Temporal's own records: the
// retention sweep (internal/cleanup) walks the task folders to find tasks
// whose objects have expired, and the clients read a task's transcript once
// Temporal has removed its execution (internal/retained). Every listing is
// paged and bounded, so a huge store is walked in steps.

// tasksRoot is the folder holding one folder per task.
const tasksRoot = "tasks/"

// MaxListPage bounds one page of ListTasks.
const MaxListPage = 1000

// MaxObjectsPerTask bounds how many objects Describe reads the attributes
// of; a task with more is described by the first ones (Truncated).
const MaxObjectsPerTask = 100_000

// ListTasks returns the task folders' segments (blobkey.Segment of the task
// IDs) of one page of at most pageSize, from the page token (nil: the first
// page), and the next page's token (nil: the last page).
func (s *Store) ListTasks(ctx context.Context, token []byte, pageSize int) (segments []string, next []byte, err error) {
	if pageSize <= 0 || pageSize > MaxListPage {
		return nil, nil, fmt.Errorf("transcript: list page size %d: want 1 to %d", pageSize, MaxListPage)
	}
	if len(token) == 0 {
		token = blob.FirstPageToken
	}
	objs, next, err := s.b.ListPage(ctx, token, pageSize, &blob.ListOptions{Prefix: tasksRoot, Delimiter: "/"})
	if err != nil {
		return nil, nil, fmt.Errorf("transcript: listing tasks: %w", err)
	}
	for _, o := range objs {
		if !o.IsDir {
			continue // nothing but folders belongs here
		}
		segments = append(segments, strings.TrimSuffix(strings.TrimPrefix(o.Key, tasksRoot), "/"))
	}
	return segments, next, nil
}

// Folder is one transcript of a task: the folder
// tasks/<task segment>/<first run segment>/ and what its objects say.
type Folder struct {
	TaskSegment     string
	FirstRunSegment string
	// Newest is the newest object's modification time.
	Newest time.Time
	// Objects counts the folder's objects (entries, stash, link).
	Objects int
	// Entries are the positions of the folder's own entries, sorted.
	Entries []int
	// Stash are the names (segments, blobkey.Segment) of its stash objects.
	Stash []string
	// Linked: the folder has a link object (the transcript continues
	// another task's, whose entries it reads below its first own one).
	Linked bool
	// Truncated: the folder holds more than MaxObjectsPerTask objects;
	// the fields describe the first ones.
	Truncated bool
}

// Stashed reports whether the folder holds the stash object name.
func (f Folder) Stashed(name string) bool {
	seg := blobkey.Segment(name)
	for _, n := range f.Stash {
		if n == seg {
			return true
		}
	}
	return false
}

// FirstRunID is the first run ID the folder's segment escapes ("" when the
// segment is a hashed one).
func (f Folder) FirstRunID() string { id, _ := blobkey.Unsegment(f.FirstRunSegment); return id }

// mountSpaceFolder is where a mount sharing the transcript's bucket keeps
// a task's files (tasks/<task>/files/, internal/mount/key.go): not a
// transcript folder (run IDs are never "files").
const mountSpaceFolder = "files"

// Describe lists the transcripts of the task folder segment (one per chain
// that used the task ID), newest first. A task with no objects has none.
func (s *Store) Describe(ctx context.Context, segment string) ([]Folder, error) {
	return s.describe(ctx, segment, "")
}

// describe lists the objects of the task folder segment under its
// sub-prefix within (a first-run folder "run/", or "" for every one).
// Continuation records and the sweep's markers count as objects but do not
// date a folder (bookkeeping).
func (s *Store) describe(ctx context.Context, segment, within string) ([]Folder, error) {
	if segment == "" || strings.Contains(segment, "/") {
		return nil, fmt.Errorf("transcript: bad task segment %q", segment)
	}
	prefix := tasksRoot + segment + "/"
	byRun := map[string]*Folder{}
	var order []string
	it := s.b.List(&blob.ListOptions{Prefix: prefix + within})
	for n := 0; ; n++ {
		o, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("transcript: listing task %s: %w", segment, err)
		}
		if n >= MaxObjectsPerTask {
			for _, f := range byRun {
				f.Truncated = true
			}
			break
		}
		run, rest, ok := strings.Cut(strings.TrimPrefix(o.Key, prefix), "/")
		if !ok || o.IsDir || run == mountSpaceFolder {
			continue
		}
		f := byRun[run]
		if f == nil {
			f = &Folder{TaskSegment: segment, FirstRunSegment: run}
			byRun[run] = f
			order = append(order, run)
		}
		f.Objects++
		if o.ModTime.After(f.Newest) && !bookkeeping(rest) {
			f.Newest = o.ModTime
		}
		switch {
		case rest == "link.json":
			f.Linked = true
		case strings.HasPrefix(rest, "stash/") && strings.HasSuffix(rest, ".json"):
			f.Stash = append(f.Stash, strings.TrimSuffix(strings.TrimPrefix(rest, "stash/"), ".json"))
		case strings.HasPrefix(rest, "entries/") && strings.HasSuffix(rest, ".json"):
			if p, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(rest, "entries/"), ".json")); err == nil {
				f.Entries = append(f.Entries, p)
			}
		}
	}
	out := make([]Folder, 0, len(order))
	for _, run := range order {
		f := byRun[run]
		sort.Ints(f.Entries)
		out = append(out, *f)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Newest.After(out[j].Newest) })
	return out, nil
}

// SegmentPrefix is the ID prefix a hashed segment keeps in clear (the part
// before its hash), "" when there is none: a search for the ID can start
// from it.
func SegmentPrefix(segment string) string {
	head, _, ok := strings.Cut(segment, "~")
	if !ok {
		return ""
	}
	// The head is cut at an escape's start, so it reads back whole.
	id, ok := blobkey.Unsegment(head)
	if !ok {
		return ""
	}
	return id
}

// KeyOf is the key that reads folder f whole: its own entries start at the
// first listed position when it continues another transcript (Linked), at
// 0 otherwise. A linked folder with no entries of its own reads its
// parent's (From is then the parent's length, which the caller gives).
func KeyOf(taskID string, f Folder, parentLength int) Key {
	k := Key{TaskID: taskID, FirstRunID: f.FirstRunID()}
	if f.Linked {
		if len(f.Entries) > 0 {
			k.From = f.Entries[0]
		} else {
			k.From = parentLength
		}
	}
	return k
}

// ReadLink returns the transcript k continues (false: none).
func (s *Store) ReadLink(ctx context.Context, k Key) (Link, bool, error) {
	l, err := s.readLink(ctx, k)
	if errors.Is(err, ErrNotFound) {
		return l, false, nil
	}
	return l, err == nil, err
}
