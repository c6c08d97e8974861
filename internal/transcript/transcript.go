// Package transcript keeps the append-only transcript of each task on blob
// storage (gocloud.dev/blob): activities write new entries and read the recent
// window themselves, and the workflow's messages query reads entries of earlier
// runs, so the conversation never travels through workflow history.
//
// Layout under the bucket root, one object per entry (blob stores have no
// append, and one object per position makes retries idempotent):
//
//	tasks/<task id>/<first run id>/entries/<position, 10 digits>.json  one contract.Message
//	tasks/<task id>/<first run id>/stash/<name>.json                   PutJSON / GetJSON, PutOnce / GetOnce
//	tasks/<task id>/<first run id>/link.json                           a continuation's Parent
//
// A task that continues another (rescue, resume) writes only its own
// transcript; positions below its Key.From are read from the one it
// continues (see Key), so any number of continuations of one task never
// write the same object.
//
// Positions are 0-based in commit order. IDs and names are escaped to
// [a-z0-9_-] plus %hh (see package blobkey), so no task ID can add a "/", reach
// ".." or collide with another on a case-folding local file system.
//
// Entries are created with a conditional write (IfNotExist): rewriting the
// same entry succeeds, and a different one fails with ErrConflict when the
// same workflow run wrote the stored one, so retried or concurrent writers
// of a run cannot fork a transcript. (Object stores check the condition
// atomically; fileblob only within one process, so two processes writing
// different entries at the same position of a shared local folder in the
// same instant could both succeed.) An entry written in an activity records
// its writer (see Writer: the workflow run and the start of the activity
// attempt) in a member every decoder ignores, so after a Temporal reset,
// whose new run writes positions the replaced run wrote, the new run's
// entries replace the replaced run's, while an attempt of the replaced run
// that writes late (a zombie) is refused with ErrSuperseded. Objects written
// before writers were recorded read as they always did and count as older
// than any writer.
//
// Each Store caches recently written and read entries in memory (LRU, 4096
// entries / 64 MiB); a cached object serves a run only once that run wrote
// or read it (cache.go).
package transcript

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"gocloud.dev/blob"
	_ "gocloud.dev/blob/fileblob" // file://, the default local folder
	_ "gocloud.dev/blob/gcsblob"  // gs://
	_ "gocloud.dev/blob/memblob"  // mem://, for tests
	_ "gocloud.dev/blob/s3blob"   // s3://
	"gocloud.dev/gcerrors"

	"github.com/agenttask/agenttask/contract"
)

// parallelism bounds concurrent blob operations of one call: enough to hide
// object-store latency, few enough not to hog file descriptors.
const parallelism = 8

// Window reads backwards in chunks sized from the budget left, within these bounds.
const (
	windowMinChunk = 8
	windowMaxChunk = 256
)

var (
	// ErrNotFound: the entry or stash object does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict: the position already holds a different entry, written
	// by the writer's own run (or by a writer whose run is unknown).
	ErrConflict = errors.New("position already holds a different entry")
	// ErrSuperseded: the position holds an entry of a run that replaced the
	// writer's (a Temporal reset): the writer's run is over and its entry
	// is refused.
	ErrSuperseded = errors.New("position holds an entry of the run that replaced this writer's run")
)

// PositionError names the transcript position an operation failed at.
type PositionError struct {
	Key      Key
	Position int
	Err      error // ErrNotFound, ErrConflict or ErrSuperseded
}

func (e *PositionError) Error() string {
	return fmt.Sprintf("transcript %s: position %d: %v", e.Key, e.Position, e.Err)
}

func (e *PositionError) Unwrap() error { return e.Err }

// Store reads and writes transcripts in one bucket. It is safe for concurrent use.
type Store struct {
	b     *blob.Bucket
	owned bool
	cache *lru
}

// Open opens the bucket at bucketURL (file://, s3://, gs://, mem://; a plain
// folder path is taken as file://). For local folders it creates the folder if
// missing, writes temporary files beside the target (a rename from the system
// temp dir fails across file systems) and skips fileblob's metadata sidecar
// files, unless the URL sets those fileblob parameters itself.
func Open(ctx context.Context, bucketURL string) (*Store, error) {
	return OpenWith(ctx, bucketURL, nil)
}

// OpenWith is Open with the opened bucket passed through wrap (nil: none),
// e.g. a faultblob.Wrap for tests that simulate a storage outage. Close
// closes the wrapped bucket.
func OpenWith(ctx context.Context, bucketURL string, wrap func(*blob.Bucket) *blob.Bucket) (*Store, error) {
	u, err := withLocalDefaults(bucketURL)
	if err != nil {
		return nil, err
	}
	b, err := blob.OpenBucket(ctx, u)
	if err != nil {
		return nil, fmt.Errorf("transcript: open %s: %w", bucketURL, err)
	}
	if wrap != nil {
		b = wrap(b)
	}
	s := NewFromBucket(b)
	s.owned = true
	return s, nil
}

func withLocalDefaults(raw string) (string, error) {
	if raw == "" {
		return "", errors.New("transcript: empty bucket URL")
	}
	var u *url.URL
	if !strings.Contains(raw, "://") {
		abs, err := filepath.Abs(raw)
		if err != nil {
			return "", fmt.Errorf("transcript: %w", err)
		}
		p := filepath.ToSlash(abs)
		if !strings.HasPrefix(p, "/") { // Windows drive letter
			p = "/" + p
		}
		u = &url.URL{Scheme: "file", Path: p}
	} else {
		var err error
		if u, err = url.Parse(raw); err != nil {
			return "", fmt.Errorf("transcript: bucket URL %q: %w", raw, err)
		}
		if u.Scheme != "file" {
			return raw, nil
		}
	}
	q := u.Query()
	for k, v := range map[string]string{"create_dir": "1", "no_tmp_dir": "1", "metadata": "skip"} {
		if _, set := q[k]; !set {
			q.Set(k, v)
		}
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// NewFromBucket wraps an open bucket. The bucket stays the caller's: Close
// does not close it.
func NewFromBucket(b *blob.Bucket) *Store {
	return &Store{b: b, cache: newLRU()}
}

// Close closes the bucket if Open opened it.
func (s *Store) Close() error {
	if !s.owned {
		return nil
	}
	return s.b.Close()
}

// Write stores entries at positions first, first+1, ... . Rewriting an entry
// that is already stored (activity retries, a cancelled turn re-sent) succeeds.
// A different entry at a stored position replaces it when an earlier run
// wrote it (one a reset replaced) or its writer is unknown; otherwise it
// fails with a *PositionError wrapping ErrConflict (the writer's own run
// wrote it, or the writer has no run) or ErrSuperseded (a later run wrote
// it). Neither is fixed by retrying.
func (s *Store) Write(ctx context.Context, k Key, first int, entries []contract.Message) error {
	if first < 0 {
		return fmt.Errorf("transcript %s: negative position %d", k, first)
	}
	return forEach(ctx, len(entries), func(ctx context.Context, i int) error {
		return s.writeOne(ctx, k, first+i, entries[i])
	})
}

func (s *Store) writeOne(ctx context.Context, k Key, pos int, m contract.Message) error {
	if pos < k.From {
		return fmt.Errorf("transcript %s: position %d belongs to the transcript this one continues (its own entries start at %d): never written here", k, pos, k.From)
	}
	key, err := k.entryKey(pos)
	if err != nil {
		return err
	}
	content, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("transcript %s: position %d: %w", k, pos, err)
	}
	w := WriterOf(ctx)
	if it, ok := s.cache.item(key, w.Run); ok {
		if old, _ := unstamp(it.val); sameJSON(old, content) {
			return nil // written before, by this call's run or one it continues
		}
		// Different: what storage holds now decides, not a cached copy.
	}
	data := stamp(content, m, w)
	err = s.b.WriteAll(ctx, key, data, &blob.WriterOptions{ContentType: "application/json", IfNotExist: true})
	if err == nil {
		s.cache.stored(key, data, w.Run)
		return nil
	}
	if gcerrors.Code(err) != gcerrors.FailedPrecondition {
		return fmt.Errorf("transcript %s: write position %d: %w", k, pos, err)
	}
	// Written before, by an earlier attempt, another worker or another run.
	raw, err := s.b.ReadAll(ctx, key)
	if err != nil {
		return fmt.Errorf("transcript %s: read back position %d: %w", k, pos, err)
	}
	old, by := unstamp(raw)
	if sameJSON(old, content) {
		s.cache.stored(key, raw, w.Run)
		return nil
	}
	switch decide(by, w) {
	case replace:
		// A run a reset replaced wrote it: this run's entry takes its place.
		// (Blob stores cannot replace on a condition, so a writer of an
		// earlier run racing this one in the same instant could still win.)
		if err := s.b.WriteAll(ctx, key, data, &blob.WriterOptions{ContentType: "application/json"}); err != nil {
			return fmt.Errorf("transcript %s: replace position %d: %w", k, pos, err)
		}
		s.cache.stored(key, data, w.Run)
		return nil
	case superseded:
		s.cache.stored(key, raw, w.Run)
		return &PositionError{Key: k, Position: pos, Err: ErrSuperseded}
	default:
		s.cache.stored(key, raw, w.Run)
		return &PositionError{Key: k, Position: pos, Err: ErrConflict}
	}
}

// sameJSON compares encoded entries; the byte comparison settles nearly every
// case since Message encodes canonically.
func sameJSON(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var va, vb any
	return decodeNumbers(a, &va) == nil && decodeNumbers(b, &vb) == nil && reflect.DeepEqual(va, vb)
}

func decodeNumbers(data []byte, v *any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	return d.Decode(v)
}

// Read returns entries [from, to) in order. A missing position fails with a
// *PositionError wrapping ErrNotFound.
func (s *Store) Read(ctx context.Context, k Key, from, to int) ([]contract.Message, error) {
	if from < 0 || to < from {
		return nil, fmt.Errorf("transcript %s: bad range [%d, %d)", k, from, to)
	}
	items, err := s.readItems(ctx, k, from, to)
	if err != nil {
		return nil, err
	}
	return s.decode(ctx, k, from, items)
}

// Window returns the longest suffix of [0, end) that fits in budgetBytes when
// encoded as a JSON array (len(json.Marshal(entries)) <= budgetBytes), and the
// position of its first entry. If even the last entry does not fit, it returns
// first == end and no entries: the caller decides whether to truncate or fail.
// It reads backwards in chunks, so a missing position just before the window
// can fail the call.
func (s *Store) Window(ctx context.Context, k Key, end int, budgetBytes int) (first int, entries []contract.Message, err error) {
	if end < 0 {
		return 0, nil, fmt.Errorf("transcript %s: negative end %d", k, end)
	}
	size := len("[]")
	first = end
	var picked []*lruItem // newest first
	chunk := windowMinChunk
	for first > 0 {
		lo := max(0, first-chunk)
		items, err := s.readItems(ctx, k, lo, first)
		if err != nil {
			return 0, nil, err
		}
		for i := len(items) - 1; i >= 0; i-- {
			add := items[i].size
			if first < end {
				add++ // the comma
			}
			if size+add > budgetBytes {
				slices.Reverse(picked)
				entries, err = s.decode(ctx, k, first, picked)
				return first, entries, err
			}
			size += add
			first--
			picked = append(picked, items[i])
		}
		// Read about as many entries as the remaining budget holds at the average size so far.
		avg := (size - 2) / (end - first)
		chunk = min(max((budgetBytes-size)/(avg+1)+1, windowMinChunk), windowMaxChunk)
	}
	slices.Reverse(picked)
	entries, err = s.decode(ctx, k, first, picked)
	return first, entries, err
}

func (s *Store) readItems(ctx context.Context, k Key, from, to int) ([]*lruItem, error) {
	out := make([]*lruItem, to-from)
	err := forEach(ctx, len(out), func(ctx context.Context, i int) error {
		var err error
		out[i], err = s.readOne(ctx, k, from+i)
		return err
	})
	return out, err
}

// entryBlob is the blob key of position pos as k sees it: in k's own
// transcript, or, below k.From, in the transcript k continues (followed
// through link objects as far as the chain goes).
func (s *Store) entryBlob(ctx context.Context, k Key, pos int) (string, error) {
	for depth := 0; pos < k.From; depth++ {
		p := k.Parent
		if p == nil {
			l, err := s.readLink(ctx, k)
			if err != nil {
				return "", err
			}
			p = &l
		}
		// A transcript's own entries never start before its parent's; a
		// made-up chain (a cycle) ends at the depth bound.
		if p.From > k.From || depth >= maxChain {
			return "", fmt.Errorf("transcript %s: its chain of continued transcripts is malformed at %s/%s (from %d, parent from %d)", k, p.TaskID, p.FirstRunID, k.From, p.From)
		}
		k = p.Key()
	}
	return k.entryKey(pos)
}

// maxChain bounds how many continued transcripts one read follows.
const maxChain = 1000

// WriteLink records k.Parent in k's link object, so that a task continuing
// k's task finds k's ancestors (its own key names k only). Writing the same
// link again succeeds; a different one fails with ErrConflict.
func (s *Store) WriteLink(ctx context.Context, k Key) error {
	if k.Parent == nil {
		return nil
	}
	key, err := k.linkKey()
	if err != nil {
		return err
	}
	data, _ := json.Marshal(k.Parent)
	err = s.b.WriteAll(ctx, key, data, &blob.WriterOptions{ContentType: "application/json", IfNotExist: true})
	if err == nil {
		s.cache.add(key, data)
		return nil
	}
	if gcerrors.Code(err) != gcerrors.FailedPrecondition {
		return fmt.Errorf("transcript %s: write link: %w", k, err)
	}
	old, err := s.b.ReadAll(ctx, key)
	if err != nil {
		return fmt.Errorf("transcript %s: read back link: %w", k, err)
	}
	if !sameJSON(old, data) {
		return fmt.Errorf("transcript %s: link: %w", k, ErrConflict)
	}
	return nil
}

func (s *Store) readLink(ctx context.Context, k Key) (Link, error) {
	var l Link
	key, err := k.linkKey()
	if err != nil {
		return l, err
	}
	data, ok := s.cache.get(key)
	if !ok {
		data, err = s.b.ReadAll(ctx, key)
		if gcerrors.Code(err) == gcerrors.NotFound {
			return l, fmt.Errorf("transcript %s: its entries below %d are another transcript's, and its link naming that one is missing: %w", k, k.From, ErrNotFound)
		}
		if err != nil {
			return l, fmt.Errorf("transcript %s: read link: %w", k, err)
		}
		s.cache.add(key, data)
	}
	if err := json.Unmarshal(data, &l); err != nil {
		return l, fmt.Errorf("transcript %s: link: %w", k, err)
	}
	return l, nil
}

func (s *Store) readOne(ctx context.Context, k Key, pos int) (*lruItem, error) {
	key, err := s.entryBlob(ctx, k, pos)
	if err != nil {
		return nil, err
	}
	run := WriterOf(ctx).Run
	if it, ok := s.cache.item(key, run); ok {
		return it, nil
	}
	data, err := s.b.ReadAll(ctx, key)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return nil, &PositionError{Key: k, Position: pos, Err: ErrNotFound}
	}
	if err != nil {
		return nil, fmt.Errorf("transcript %s: read position %d: %w", k, pos, err)
	}
	return s.cache.stored(key, data, run), nil
}

// decode spreads decoding over the workers too: for cached entries it is
// the whole cost of a read.
// Decoded entries are memoised on their items; a returned message shares
// its parts and values with the memo, so callers must not mutate them. (The
// writer's member, inside the first part, is not a ContentPart field: it
// is not decoded.)
func (s *Store) decode(ctx context.Context, k Key, from int, items []*lruItem) ([]contract.Message, error) {
	out := make([]contract.Message, len(items))
	err := forEach(ctx, len(items), func(ctx context.Context, i int) error {
		it := items[i]
		if m := it.msg.Load(); m != nil {
			out[i] = *m
			return nil
		}
		if err := json.Unmarshal(it.val, &out[i]); err != nil {
			return fmt.Errorf("transcript %s: position %d: %w", k, from+i, err)
		}
		m := out[i]
		it.msg.Store(&m)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// PutJSON stores v as JSON under name, replacing any earlier value. Used to
// carry large state across continue-as-new by reference.
func (s *Store) PutJSON(ctx context.Context, k Key, name string, v any) error {
	key, err := k.stashKey(name)
	if err != nil {
		return err
	}
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("transcript %s: stash %q: %w", k, name, err)
	}
	if err := s.b.WriteAll(ctx, key, data, &blob.WriterOptions{ContentType: "application/json"}); err != nil {
		return fmt.Errorf("transcript %s: stash %q: %w", k, name, err)
	}
	return nil
}

// GetJSON decodes the value stored under name into v; a missing name fails
// with an error wrapping ErrNotFound.
func (s *Store) GetJSON(ctx context.Context, k Key, name string, v any) error {
	key, err := k.stashKey(name)
	if err != nil {
		return err
	}
	data, err := s.b.ReadAll(ctx, key)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return fmt.Errorf("transcript %s: stash %q: %w", k, name, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("transcript %s: stash %q: %w", k, name, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("transcript %s: stash %q: %w", k, name, err)
	}
	return nil
}

// PutOnce stores v under name unless a value is stored there already, in
// which case it decodes the stored value into stored and reports true: a
// retried or repeated writer adopts the first value instead of replacing it.
// Under PerRun, a value an earlier run stored (or one whose writer is
// unknown) is replaced rather than adopted (see PerRun).
func (s *Store) PutOnce(ctx context.Context, k Key, name string, v, stored any) (bool, error) {
	key, err := k.stashKey(name)
	if err != nil {
		return false, err
	}
	content, err := json.Marshal(v)
	if err != nil {
		return false, fmt.Errorf("transcript %s: stash %q: %w", k, name, err)
	}
	w := WriterOf(ctx)
	perRun := isPerRun(ctx) && w.Run != ""
	data := content
	if perRun {
		data = stamp(content, v, w)
	}
	err = s.b.WriteAll(ctx, key, data, &blob.WriterOptions{ContentType: "application/json", IfNotExist: true})
	if err == nil {
		s.cache.stored(key, data, w.Run)
		return false, nil
	}
	if gcerrors.Code(err) != gcerrors.FailedPrecondition {
		return false, fmt.Errorf("transcript %s: stash %q: %w", k, name, err)
	}
	if !perRun {
		return true, s.GetOnce(ctx, k, name, stored)
	}
	raw, err := s.b.ReadAll(ctx, key)
	if err != nil {
		return false, fmt.Errorf("transcript %s: stash %q: read back: %w", k, name, err)
	}
	if old, by := unstamp(raw); !sameJSON(old, content) && decide(by, w) == replace {
		if err := s.b.WriteAll(ctx, key, data, &blob.WriterOptions{ContentType: "application/json"}); err != nil {
			return false, fmt.Errorf("transcript %s: stash %q: replace: %w", k, name, err)
		}
		s.cache.stored(key, data, w.Run)
		return false, nil
	}
	it := s.cache.stored(key, raw, w.Run)
	if err := json.Unmarshal(it.val, stored); err != nil {
		return false, fmt.Errorf("transcript %s: stash %q: %w", k, name, err)
	}
	return true, nil
}

// GetOnce is GetJSON for a value written by PutOnce: it changes only when a
// run that replaced another stores its own, so it is cached. Under PerRun
// it finds only a value the reader's own run stored; another is
// ErrNotFound.
func (s *Store) GetOnce(ctx context.Context, k Key, name string, v any) error {
	key, err := k.stashKey(name)
	if err != nil {
		return err
	}
	w := WriterOf(ctx)
	it, ok := s.cache.item(key, w.Run)
	if !ok {
		data, err := s.b.ReadAll(ctx, key)
		if gcerrors.Code(err) == gcerrors.NotFound {
			return fmt.Errorf("transcript %s: stash %q: %w", k, name, ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("transcript %s: stash %q: %w", k, name, err)
		}
		it = s.cache.stored(key, data, w.Run)
	}
	if isPerRun(ctx) && w.Run != "" && it.writer.Run != w.Run {
		return fmt.Errorf("transcript %s: stash %q holds another run's value: %w", k, name, ErrNotFound)
	}
	if err := json.Unmarshal(it.val, v); err != nil {
		return fmt.Errorf("transcript %s: stash %q: %w", k, name, err)
	}
	return nil
}

// forEach runs fn for 0..n-1 on up to parallelism goroutines. The first error
// cancels the others' context and is returned; results are written by index,
// so callers keep order without sorting.
func forEach(ctx context.Context, n int, fn func(ctx context.Context, i int) error) error {
	if n == 1 {
		return fn(ctx, 0)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		next   atomic.Int64
		failed atomic.Bool
		once   sync.Once
		first  error
		wg     sync.WaitGroup
	)
	for range min(n, parallelism) {
		wg.Go(func() {
			for !failed.Load() {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(ctx, i); err != nil {
					once.Do(func() { first = err; failed.Store(true); cancel() })
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}
