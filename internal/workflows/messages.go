package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
)

// TranscriptReader reads committed entries that earlier runs left in the
// task's transcript. Only the `messages` query uses it: the list is served
// from the task's own state (this run's memory plus the task's transcript),
// never from event history.
//
// The query runs under the SDK's per-workflow lock, so a reader must not
// wait on storage for long: the worker's reader (worker.QueryReader) serves
// from memory, or loads in the background and gives up waiting after a
// short bound with an error that wraps ErrTranscriptLoading; the query then
// answers MESSAGES_LOADING and the load goes on filling the reader's cache.
type TranscriptReader interface {
	Read(ctx context.Context, key activities.TranscriptKey, from, to int) ([]contract.Message, error)
}

// ErrTranscriptLoading is what a TranscriptReader returns (wrapped) when the
// entries asked for are still being loaded from storage in the background:
// the query answers MESSAGES_LOADING instead of waiting under the lock.
var ErrTranscriptLoading = errors.New("earlier messages are being loaded from storage")

// IsMessagesLoading reports whether err (from a `messages` query, as a
// Temporal client returns it) is the MESSAGES_LOADING refusal.
func IsMessagesLoading(err error) bool {
	return err != nil && strings.Contains(err.Error(), contract.ErrMessagesLoading+": ")
}

// How long and how often the clients of this module (starter, Tasks API)
// retry a `messages` query that answered MESSAGES_LOADING: past the
// transcript's read timeout a load has failed or finished.
const (
	MessagesLoadingRetryFor   = transcriptReadTimeout + 2*time.Second
	MessagesLoadingRetryPause = 250 * time.Millisecond
)

// TranscriptReadTimeout bounds one read of entries of earlier runs from
// the transcript store (the worker's background loads).
const TranscriptReadTimeout = 10 * time.Second

const (
	transcriptReadTimeout = TranscriptReadTimeout
	transcriptReadBatch   = 64
)

// messages answers the `messages` query: the messages projection (docs/contract.md), ordered by
// committed_at, inputs not yet committed after: the queue, then those still
// in their arrival check (received, so listed; rules.listArriving). With a
// page it returns the slice after the first page.After entries, at most
// page.Limit of them and never more than MaxPageBytes. waiting are the
// inputs not yet committed; reader reads the transcript.
func messages(c *Carry, waiting []contract.Message, reader TranscriptReader, page *contract.MessagesPage) ([]contract.Message, error) {
	total := c.length() + len(waiting)
	from, limit, maxBytes := 0, total, contract.MaxFullListBytes
	if page != nil {
		if page.After < 0 || page.Limit < 0 {
			return nil, fmt.Errorf("after and limit must not be negative")
		}
		from, maxBytes = page.After, contract.MaxPageBytes
		if page.Limit > 0 {
			limit = page.Limit
		}
	}
	out := []contract.Message{}
	size := 2
	add := func(m contract.Message) bool {
		b, _ := json.Marshal(m)
		if len(out) > 0 && size+len(b)+1 > maxBytes {
			return false
		}
		out = append(out, m)
		size += len(b) + 1
		return true
	}
	p := from
	// Entries before Base live in the transcript.
	for p < c.base() && len(out) < limit {
		to := min(p+transcriptReadBatch, c.base(), p+limit-len(out))
		batch, err := readTranscript(reader, c.transcriptKey(), p, to)
		if err != nil {
			return nil, err
		}
		for _, m := range batch {
			if !add(m) {
				return truncated(page, out, total)
			}
			p++
		}
	}
	for ; p < total && len(out) < limit; p++ {
		var m contract.Message
		if p < c.length() {
			m = c.at(p).Msg
		} else {
			m = waiting[p-c.length()]
		}
		if !add(m) {
			return truncated(page, out, total)
		}
	}
	return out, nil
}

// truncated is what a reply does when the byte bound stops it: a page ends
// early (the reader continues from after+len), the full list is refused.
func truncated(page *contract.MessagesPage, out []contract.Message, total int) ([]contract.Message, error) {
	if page != nil {
		return out, nil
	}
	return nil, fmt.Errorf("the conversation holds %d entries, more than one reply of %d bytes carries; read it by pages with the argument {\"after\": n, \"limit\": m}", total, contract.MaxFullListBytes)
}

func readTranscript(reader TranscriptReader, key activities.TranscriptKey, from, to int) ([]contract.Message, error) {
	if reader == nil {
		return nil, fmt.Errorf("entries %d-%d are in the task's transcript, which this worker cannot read (no transcript store configured)", from, to-1)
	}
	// Only the messages query reads here (it writes nothing to history), so
	// its deadline on the store cannot change a replay.
	//workflowcheck:ignore
	ctx, cancel := context.WithTimeout(context.Background(), transcriptReadTimeout)
	defer cancel()
	ms, err := reader.Read(ctx, key, from, to)
	if errors.Is(err, ErrTranscriptLoading) {
		return nil, &contract.Error{Type: contract.ErrMessagesLoading, Message: fmt.Sprintf(
			"earlier messages are being loaded from storage; retry the query in a moment (entries %d-%d, from the task's transcript)", from, to-1)}
	}
	if err != nil {
		return nil, fmt.Errorf("reading entries %d-%d from the transcript: %w", from, to-1, err)
	}
	return ms, nil
}

// uncommitted is the inputs received and not yet committed: the queue, then
// (rules.listArriving) those in their arrival check, oldest first.
func uncommitted(queued, arriving []contract.Message, listArriving bool) []contract.Message {
	if !listArriving || len(arriving) == 0 {
		return queued
	}
	out := append([]contract.Message(nil), queued...)
	sort.SliceStable(arriving, func(i, j int) bool { return arriving[i].ReceivedAt < arriving[j].ReceivedAt })
	return append(out, arriving...)
}
