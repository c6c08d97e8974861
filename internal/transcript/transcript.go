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
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"gocloud.dev/blob"
	_ "gocloud.dev/blob/fileblob" // file://, the default local folder
	_ "gocloud.dev/blob/gcsblob"  // gs://
	_ "gocloud.dev/blob/memblob"  // mem://, for tests
	_ "gocloud.dev/blob/s3blob"   // s3://
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
	// recorded: the continuations whose record this Store wrote or found
	// no transcript to write in (continuations.go).
	recorded recordedMemo
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
