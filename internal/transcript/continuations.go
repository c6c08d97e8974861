package transcript

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/agenttask/agenttask/internal/blobkey"
)

// Continuations (docs/design.md#continuations). A task
// that continues another (rescue, resume) reads the positions below its own
// From from the transcript it continues, through its link. So the earlier
// transcript records its continuations, and what removes it (DELETE, the
// retention sweep: internal/cleanup) keeps what a live continuation reads:
//
//	tasks/<task>/<first run>/continuations/<cont task>/<cont first run>.json   a Continuation
//	tasks/<task>/<first run>/stash/kept-for-continuations.json                 a Kept: the task was deleted, these objects stay
//
// A continuation is live while its own link object exists: it is written
// before the record (WriteLink), and it goes only when the continuation
// itself is purged with nothing kept (a continuation kept for a
// continuation of its own keeps its link, so chains stay live end to end).

// Continuation names a transcript that continues another: its task, its
// first run and its own first position (the positions below are read from
// the transcript it continues).
type Continuation struct {
	TaskID     string `json:"taskId"`
	FirstRunID string `json:"firstRunId"`
	From       int    `json:"from"`
	// RecordedAt is when the record was written (UTC, RFC 3339).
	RecordedAt string `json:"recordedAt,omitempty"`
}

// KeptName is the stash object of a transcript whose task was deleted (by
// DELETE or by the retention sweep) while a continuation still read it:
// the objects that continuation reads stay, the rest went.
const KeptName = "kept-for-continuations"

// Kept is what KeptName holds.
type Kept struct {
	DeletedAt string `json:"deletedAt"`
	// Below: the entries below this position stay (the largest From of the
	// live continuations), with the link and the continuation records.
	Below int            `json:"below"`
	For   []Continuation `json:"for"`
}

// DatedName is the stash object in which the retention sweep records the
// date of a transcript no run writes any more (its newest object's time,
// found once by listing it), so later sweeps read one small object instead
// of listing every entry again.
const DatedName = "retention-dated"

// Dated is what DatedName holds.
type Dated struct {
	Newest  time.Time `json:"newest"`
	DatedAt string    `json:"datedAt"`
}

// continuationsFolder is the folder of a transcript's continuation records.
const continuationsFolder = "continuations/"

// bookkeeping reports whether rest (a key below a transcript's folder)
// is an object the runtime writes about the transcript rather than of it:
// continuation records and the sweep's markers. They do not date the
// transcript (Folder.Newest), so writing one never makes an older chain
// of a reused task ID look like the newest.
func bookkeeping(rest string) bool {
	return strings.HasPrefix(rest, continuationsFolder) ||
		rest == "stash/"+blobkey.Segment(KeptName)+".json" ||
		rest == "stash/"+blobkey.Segment(DatedName)+".json"
}

func (k Key) continuationKey(c Key) (string, error) {
	p, err := k.prefix()
	if err != nil {
		return "", err
	}
	if c.TaskID == "" || c.FirstRunID == "" {
		return "", fmt.Errorf("transcript: continuation %+v needs a task ID and a first run ID", c)
	}
	return p + continuationsFolder + blobkey.Segment(c.TaskID) + "/" + blobkey.Segment(c.FirstRunID) + ".json", nil
}

// RecordContinuation writes, in the folder of the transcript k continues
// (k.Parent), the record naming k. Writing it again succeeds (the first
// record stays). A key that continues nothing records nothing.
func (s *Store) RecordContinuation(ctx context.Context, k Key) error {
	if k.Parent == nil {
		return nil
	}
	key, err := k.Parent.Key().continuationKey(k)
	if err != nil {
		return err
	}
	data, _ := json.Marshal(Continuation{TaskID: k.TaskID, FirstRunID: k.FirstRunID, From: k.From,
		RecordedAt: time.Now().UTC().Format(time.RFC3339)})
	err = s.b.WriteAll(ctx, key, data, &blob.WriterOptions{ContentType: "application/json", IfNotExist: true})
	if err != nil && gcerrors.Code(err) != gcerrors.FailedPrecondition {
		return fmt.Errorf("transcript %s: record it as a continuation of %s/%s: %w", k, k.Parent.TaskID, k.Parent.FirstRunID, err)
	}
	s.recorded.Store(k.String(), true)
	return nil
}

// recordOnce records k as a continuation the first time this Store writes
// for it, when the transcript it continues is still there: a continuation
// started by an earlier release, whose start recorded nothing, is recorded
// at its next write.
func (s *Store) recordOnce(ctx context.Context, k Key) error {
	if k.Parent == nil {
		return nil
	}
	if _, ok := s.recorded.Load(k.String()); ok {
		return nil
	}
	there, err := s.hasObjects(ctx, k.Parent.Key())
	if err != nil {
		return err
	}
	if !there {
		s.recorded.Store(k.String(), true) // gone: nothing to record it in
		return nil
	}
	return s.RecordContinuation(ctx, k)
}

// hasObjects reports whether k's folder holds any object.
func (s *Store) hasObjects(ctx context.Context, k Key) (bool, error) {
	p, err := k.prefix()
	if err != nil {
		return false, err
	}
	objs, _, err := s.b.ListPage(ctx, blob.FirstPageToken, 1, &blob.ListOptions{Prefix: p})
	if err != nil {
		return false, fmt.Errorf("transcript %s: list: %w", k, err)
	}
	return len(objs) > 0, nil
}

// MaxContinuations bounds the continuation records one transcript is read
// for; a transcript with more keeps every entry (see Continuations).
const MaxContinuations = 1000

// Continuations lists the continuations recorded in k's folder. more is
// true when there were more than MaxContinuations.
func (s *Store) Continuations(ctx context.Context, k Key) (list []Continuation, more bool, err error) {
	p, err := k.prefix()
	if err != nil {
		return nil, false, err
	}
	it := s.b.List(&blob.ListOptions{Prefix: p + continuationsFolder})
	for {
		o, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return list, false, nil
		}
		if err != nil {
			return nil, false, fmt.Errorf("transcript %s: list its continuations: %w", k, err)
		}
		if o.IsDir || !strings.HasSuffix(o.Key, ".json") {
			continue
		}
		if len(list) >= MaxContinuations {
			return list, true, nil
		}
		data, err := s.b.ReadAll(ctx, o.Key)
		if gcerrors.Code(err) == gcerrors.NotFound {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, false, fmt.Errorf("transcript %s: read %s: %w", k, o.Key, err)
		}
		var c Continuation
		if err := json.Unmarshal(data, &c); err != nil || c.TaskID == "" || c.FirstRunID == "" {
			return nil, false, fmt.Errorf("transcript %s: continuation record %s is malformed: %v", k, o.Key, err)
		}
		list = append(list, c)
	}
}

// ForgetContinuation removes c's record from k's folder (c is gone) and
// reports whether there was one.
func (s *Store) ForgetContinuation(ctx context.Context, k Key, c Continuation) (bool, error) {
	key, err := k.continuationKey(Key{TaskID: c.TaskID, FirstRunID: c.FirstRunID})
	if err != nil {
		return false, err
	}
	err = s.b.Delete(ctx, key)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("transcript %s: forget continuation %s/%s: %w", k, c.TaskID, c.FirstRunID, err)
	}
	return true, nil
}

// Live reports whether continuation c is live: its transcript's link
// object exists (the continuation runs, or its transcript is still kept).
func (s *Store) Live(ctx context.Context, c Continuation) (bool, error) {
	key, err := Key{TaskID: c.TaskID, FirstRunID: c.FirstRunID}.linkKey()
	if err != nil {
		return false, err
	}
	ok, err := s.b.Exists(ctx, key)
	if err != nil {
		return false, fmt.Errorf("transcript: is continuation %s/%s live: %w", c.TaskID, c.FirstRunID, err)
	}
	return ok, nil
}

// LiveContinuations is the live continuations recorded in k's folder. A
// transcript with more records than MaxContinuations reports all so far
// as live and more true: the caller keeps it whole.
func (s *Store) LiveContinuations(ctx context.Context, k Key) (live []Continuation, more bool, err error) {
	all, more, err := s.Continuations(ctx, k)
	if err != nil {
		return nil, false, err
	}
	for _, c := range all {
		ok, err := s.Live(ctx, c)
		if err != nil {
			return nil, false, err
		}
		if ok {
			live = append(live, c)
		}
	}
	return live, more, nil
}

// RunFolders lists the first-run folders (segments) of a task folder: one
// per chain that used the task ID, without the files/ of a mount sharing
// the bucket. It lists folder names only, never their objects.
func (s *Store) RunFolders(ctx context.Context, taskSegment string) ([]string, error) {
	if taskSegment == "" || strings.Contains(taskSegment, "/") {
		return nil, fmt.Errorf("transcript: bad task segment %q", taskSegment)
	}
	prefix := tasksRoot + taskSegment + "/"
	var out []string
	token := blob.FirstPageToken
	for len(token) > 0 {
		objs, next, err := s.b.ListPage(ctx, token, MaxListPage, &blob.ListOptions{Prefix: prefix, Delimiter: "/"})
		if err != nil {
			return nil, fmt.Errorf("transcript: listing task %s: %w", taskSegment, err)
		}
		for _, o := range objs {
			run := strings.TrimSuffix(strings.TrimPrefix(o.Key, prefix), "/")
			if o.IsDir && run != mountSpaceFolder && run != "" {
				out = append(out, run)
			}
		}
		token = next
	}
	return out, nil
}

// DescribeRun is Describe for one first-run folder of a task folder (the
// folder's objects listed), ok false when it holds none.
func (s *Store) DescribeRun(ctx context.Context, taskSegment, runSegment string) (Folder, bool, error) {
	if runSegment == "" || strings.Contains(runSegment, "/") {
		return Folder{}, false, fmt.Errorf("transcript: bad run segment %q", runSegment)
	}
	fs, err := s.describe(ctx, taskSegment, runSegment+"/")
	if err != nil || len(fs) == 0 {
		return Folder{}, false, err
	}
	return fs[0], true, nil
}

// KeepPlan says, per first-run folder of a task, what a purge keeps: the
// folders a live continuation reads from.
type KeepPlan map[string]Kept // run segment -> what stays

// PlanKeep finds, for each first-run folder of taskID, the live
// continuations it records (other than later chains of taskID itself,
// purged with it); a folder with any keeps its link, its
// continuation records and its entries below the largest From. A folder
// with more records than MaxContinuations keeps every entry.
func (s *Store) PlanKeep(ctx context.Context, taskID string) (KeepPlan, error) {
	seg := blobkey.Segment(taskID)
	runs, err := s.RunFolders(ctx, seg)
	if err != nil {
		return nil, err
	}
	plan := KeepPlan{}
	for _, run := range runs {
		runID, ok := blobkey.Unsegment(run)
		if !ok {
			continue // not a folder this runtime wrote
		}
		all, more, err := s.LiveContinuations(ctx, Key{TaskID: taskID, FirstRunID: runID})
		if err != nil {
			return nil, err
		}
		var live []Continuation
		for _, c := range all {
			if c.TaskID != taskID { // a later chain of the same ID goes with it
				live = append(live, c)
			}
		}
		if len(live) == 0 && !more {
			continue
		}
		k := Kept{DeletedAt: time.Now().UTC().Format(time.RFC3339), For: live}
		for _, c := range live {
			k.Below = max(k.Below, c.From)
		}
		if more {
			k.Below = int(maxPosition)
		}
		plan[run] = k
	}
	return plan, nil
}

// keeps reports whether the object key (under tasks/<segment of taskID>/)
// stays under plan.
func (plan KeepPlan) keeps(taskPrefix, key string) bool {
	rest := strings.TrimPrefix(key, taskPrefix)
	run, rest, ok := strings.Cut(rest, "/")
	if !ok {
		return false
	}
	k, ok := plan[run]
	if !ok {
		return false
	}
	switch {
	case rest == "link.json", strings.HasPrefix(rest, continuationsFolder),
		rest == "stash/"+blobkey.Segment(KeptName)+".json":
		return true
	case strings.HasPrefix(rest, "entries/") && strings.HasSuffix(rest, ".json"):
		p, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(rest, "entries/"), ".json"))
		return err == nil && p < k.Below
	}
	return false
}

// MarkKept writes plan's Kept markers, before the purge removes the rest:
// from then on the task reads as deleted (internal/retained) and the sweep
// judges the folders by their continuations alone.
func (s *Store) MarkKept(ctx context.Context, taskID string, plan KeepPlan) error {
	for run, k := range plan {
		runID, _ := blobkey.Unsegment(run)
		var old Kept
		if err := s.GetJSON(ctx, Key{TaskID: taskID, FirstRunID: runID}, KeptName, &old); err == nil && old.DeletedAt != "" {
			k.DeletedAt = old.DeletedAt // deleted once; a repeated purge keeps the first date
		}
		if err := s.PutJSON(ctx, Key{TaskID: taskID, FirstRunID: runID}, KeptName, k); err != nil {
			return err
		}
	}
	return nil
}

// PurgePage removes up to max objects under the task's folder that plan
// does not keep, listing from token (nil: the start), and returns how many
// it removed and the next page's token (nil: the end); kept counts, per
// run segment, the entries it left for plan. An object already gone is not
// counted.
func (s *Store) PurgePage(ctx context.Context, taskID string, plan KeepPlan, token []byte, max int, kept map[string]int) (removed int, next []byte, err error) {
	prefix, err := TaskPrefix(taskID)
	if err != nil {
		return 0, nil, err
	}
	if max <= 0 {
		max = 1000
	}
	if len(token) == 0 {
		token = blob.FirstPageToken
	}
	objs, next, err := s.b.ListPage(ctx, token, max, &blob.ListOptions{Prefix: prefix})
	if err != nil {
		return 0, nil, fmt.Errorf("transcript: list %s: %w", prefix, err)
	}
	for _, o := range objs {
		if o.IsDir {
			continue
		}
		if plan.keeps(prefix, o.Key) {
			if run, rest, _ := strings.Cut(strings.TrimPrefix(o.Key, prefix), "/"); strings.HasPrefix(rest, "entries/") && kept != nil {
				kept[run]++
			}
			continue
		}
		err := s.b.Delete(ctx, o.Key)
		s.cache.c.Invalidate(o.Key)
		if gcerrors.Code(err) == gcerrors.NotFound {
			continue
		}
		if err != nil {
			return removed, token, fmt.Errorf("transcript: delete %s: %w", o.Key, err)
		}
		removed++
	}
	return removed, next, nil
}

// PurgeRun removes every object of one first-run folder (a transcript
// kept for continuations that are gone), at most max a call; more reports
// whether any may be left.
func (s *Store) PurgeRun(ctx context.Context, k Key, max int) (int, bool, error) {
	p, err := k.prefix()
	if err != nil {
		return 0, false, err
	}
	return s.deletePrefixPage(ctx, p, max)
}

// recordedMemo remembers the continuations this Store recorded (or found
// nothing to record in), so recordOnce costs a listing once per process.
type recordedMemo = sync.Map
