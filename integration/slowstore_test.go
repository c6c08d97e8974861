package integration

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gocloud.dev/blob"
	"gocloud.dev/blob/driver"
	"gocloud.dev/gcerrors"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/workflows"
)

// The `messages` query reads entries of earlier runs (before continue-as-new)
// from the transcript store. The query runs under the SDK's per-workflow
// lock, so it must not wait on a slow store: signals and updates of the
// task go through meanwhile, and the list is served once the store answers.
func TestSlowStoreDelaysNoUpdate(t *testing.T) {
	const (
		readLatency = 2 * time.Second // per store read; a load of ~20 entries takes 3 rounds of 8 reads
		// Held behind the load, an update would take its whole 6 s (5.94 s
		// before the reader moved off the workflow lock). The bound leaves
		// room for a loaded CI machine; that the list was still loading
		// when the update returned is the ordering itself.
		updateBound = 4 * time.Second
	)
	h := newHarness(t)
	h.model.SetHandler(echoLast)
	stop := h.runWorker(h.workerConfig())
	id := "slow-store"
	startTask(t, h, id, map[string]any{"agent": agent("a"), "continueAsNewEvents": 100})
	for i := 0; status(t, id).Run < 2; i++ {
		require.Less(t, i, 40, "the task continues as new within 40 turns")
		require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), id, "", "input", text("m"+string(rune('a'+i%26)))))
		waitOutputs(t, id, i+1)
	}
	eventually(t, 30*time.Second, "the queue answered", func() bool {
		st := status(t, id)
		return st.Queued == 0 && st.State == contract.StateWaiting
	})
	before := messages(t, id, nil)
	requireSeedOrder(t, before)
	t.Logf("%d entries after %d runs", len(before), status(t, id).Run)

	// A second worker over the same store, whose reads are slow: it holds
	// nothing in memory, so earlier runs' entries come from the store.
	stop()
	delay := &atomic.Int64{}
	delay.Store(int64(readLatency))
	cfg := h.workerConfig()
	cfg.TranscriptURL = slowStoreURL(t, h.transcript, delay)
	h.runWorker(cfg)
	eventually(t, time.Minute, "the second worker serves the task", func() bool {
		v, err := sdk.QueryWorkflow(ctxT(t, 5*time.Second), id, "", "status")
		return err == nil && v.Get(&contract.Status{}) == nil
	})

	// A reader polls the list (the Go client retries MESSAGES_LOADING)
	// while an update and a status query go to the task.
	type listed struct {
		msgs []contract.Message
		err  error
		took time.Duration
	}
	polled := make(chan listed, 1)
	var outstanding atomic.Bool
	outstanding.Store(true)
	readStart := time.Now()
	go func() {
		ms, err := h.tasks.Messages(ctxT(t, time.Minute), id, nil)
		outstanding.Store(false)
		polled <- listed{ms, err, time.Since(readStart)}
	}()
	// One raw query, as a service in another language sends it: refused at
	// once with the corrective message, never held for the store.
	type raw struct {
		err  error
		took time.Duration
	}
	rawDone := make(chan raw, 1)
	go func() {
		start := time.Now()
		_, err := sdk.QueryWorkflow(ctxT(t, 30*time.Second), id, "", "messages")
		rawDone <- raw{err, time.Since(start)}
	}()
	time.Sleep(200 * time.Millisecond)
	sendStart := time.Now()
	res, err := sendUpdate(t, id, text("sent while the store is slow"))
	sendTook := time.Since(sendStart)
	require.NoError(t, err)
	stStart := time.Now()
	st := status(t, id)
	stTook := time.Since(stStart)
	stillReading := outstanding.Load()
	r := <-rawDone
	rawErr, rawTook := r.err, r.took
	t.Logf("with store reads of %s: raw messages query answered in %s (%v); send update took %s, status query %s; list still loading: %v",
		readLatency, rawTook, rawErr, sendTook, stTook, stillReading)
	require.Less(t, sendTook, updateBound, "the update is not held behind the messages query's store reads")
	require.Less(t, stTook, updateBound, "nor is the status query")
	require.True(t, stillReading, "the list was still being loaded while the update went through")
	require.Error(t, rawErr, "a query that would wait on the store is answered at once")
	require.True(t, workflows.IsMessagesLoading(rawErr), "%v", rawErr)
	require.Contains(t, rawErr.Error(), "earlier messages are being loaded from storage; retry the query in a moment")
	require.Less(t, rawTook, updateBound)
	// The input is received (its answer may be listed too by then: the
	// turn does not wait on the slow store).
	require.GreaterOrEqual(t, st.Messages, len(before)+1, "the input is received")

	// The client's retries are served once the background load has filled
	// the worker's cache.
	got := <-polled
	require.NoError(t, got.err)
	t.Logf("the polling client got %d entries after %s", len(got.msgs), got.took)
	require.GreaterOrEqual(t, len(got.msgs), len(before)+1)
	require.Equal(t, before, got.msgs[:len(before)], "the earlier entries, complete and unchanged")
	require.Equal(t, res.ReceivedAt, got.msgs[len(before)].ReceivedAt)

	// The store recovers: the task answers the input and the list is whole.
	delay.Store(0)
	waitOutputs(t, id, countOutputs(before)+1)
	eventually(t, 30*time.Second, "the queue answered", func() bool { return status(t, id).Queued == 0 })
	all := messages(t, id, nil)
	requireSeedOrder(t, all)
	require.Len(t, all, len(before)+2)
	require.Equal(t, before, all[:len(before)])
	require.Equal(t, []string{"sent while the store is slow", "echo: sent while the store is slow"}, texts(all[len(before):]))
	var paged []contract.Message
	for len(paged) < len(all) {
		p := messages(t, id, map[string]any{"after": len(paged), "limit": 5})
		require.NotEmpty(t, p)
		paged = append(paged, p...)
	}
	require.Equal(t, all, paged)
}

func countOutputs(ms []contract.Message) int {
	n := 0
	for _, m := range ms {
		if m.Type == contract.TypeOutput {
			n++
		}
	}
	return n
}

// slowStoreURL is a transcript URL for the folder of fileURL whose reads
// each take delay (changeable while it runs). Writes are not delayed.
func slowStoreURL(t *testing.T, fileURL string, delay *atomic.Int64) string {
	t.Helper()
	slowOnce.Do(func() { blob.DefaultURLMux().RegisterBucket(slowScheme, slowOpener{}) })
	u, err := url.Parse(fileURL)
	require.NoError(t, err)
	slowDelays.Store(u.Path, delay)
	return slowScheme + "://" + u.Path
}

const slowScheme = "slowfile"

var (
	slowOnce   sync.Once
	slowDelays sync.Map // folder -> *atomic.Int64
)

type slowOpener struct{}

func (slowOpener) OpenBucketURL(ctx context.Context, u *url.URL) (*blob.Bucket, error) {
	d, ok := slowDelays.Load(u.Path)
	if !ok {
		return nil, fmt.Errorf("no slow store at %s", u.Path)
	}
	// The options the transcript store gives a local folder.
	b, err := blob.OpenBucket(ctx, "file://"+u.Path+"?create_dir=1&metadata=skip&no_tmp_dir=1")
	if err != nil {
		return nil, err
	}
	return blob.NewBucket(&slowBucket{b: b, delay: d.(*atomic.Int64)}), nil
}

// slowBucket delegates to b, each reader opening after delay.
type slowBucket struct {
	b     *blob.Bucket
	delay *atomic.Int64
}

var _ driver.Bucket = (*slowBucket)(nil)

func (d *slowBucket) ErrorCode(err error) gcerrors.ErrorCode { return gcerrors.Code(err) }
func (d *slowBucket) As(i any) bool                          { return d.b.As(i) }
func (d *slowBucket) ErrorAs(err error, i any) bool          { return d.b.ErrorAs(err, i) }
func (d *slowBucket) Close() error                           { return d.b.Close() }

func (d *slowBucket) Attributes(ctx context.Context, key string) (*driver.Attributes, error) {
	a, err := d.b.Attributes(ctx, key)
	if err != nil {
		return nil, err
	}
	return &driver.Attributes{ContentType: a.ContentType, Metadata: a.Metadata, CreateTime: a.CreateTime,
		ModTime: a.ModTime, Size: a.Size, MD5: a.MD5, ETag: a.ETag, AsFunc: a.As}, nil
}

func (d *slowBucket) ListPaged(ctx context.Context, opts *driver.ListOptions) (*driver.ListPage, error) {
	token := opts.PageToken
	if len(token) == 0 {
		token = blob.FirstPageToken
	}
	size := opts.PageSize
	if size <= 0 {
		size = 1000
	}
	objs, next, err := d.b.ListPage(ctx, token, size, &blob.ListOptions{Prefix: opts.Prefix, Delimiter: opts.Delimiter})
	if err != nil {
		return nil, err
	}
	page := &driver.ListPage{Objects: make([]*driver.ListObject, len(objs)), NextPageToken: next}
	for i, o := range objs {
		page.Objects[i] = &driver.ListObject{Key: o.Key, ModTime: o.ModTime, Size: o.Size, MD5: o.MD5, IsDir: o.IsDir, AsFunc: o.As}
	}
	return page, nil
}

func (d *slowBucket) NewRangeReader(ctx context.Context, key string, offset, length int64, opts *driver.ReaderOptions) (driver.Reader, error) {
	if wait := time.Duration(d.delay.Load()); wait > 0 {
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	r, err := d.b.NewRangeReader(ctx, key, offset, length, &blob.ReaderOptions{BeforeRead: opts.BeforeRead})
	if err != nil {
		return nil, err
	}
	return slowReader{r}, nil
}

type slowReader struct{ r *blob.Reader }

func (r slowReader) Read(p []byte) (int, error) { return r.r.Read(p) }
func (r slowReader) Close() error               { return r.r.Close() }
func (r slowReader) As(i any) bool              { return r.r.As(i) }
func (r slowReader) Attributes() *driver.ReaderAttributes {
	return &driver.ReaderAttributes{ContentType: r.r.ContentType(), ModTime: r.r.ModTime(), Size: r.r.Size()}
}

func (d *slowBucket) NewTypedWriter(ctx context.Context, key, contentType string, opts *driver.WriterOptions) (driver.Writer, error) {
	return d.b.NewWriter(ctx, key, &blob.WriterOptions{
		BufferSize: opts.BufferSize, MaxConcurrency: opts.MaxConcurrency,
		CacheControl: opts.CacheControl, ContentDisposition: opts.ContentDisposition,
		ContentEncoding: opts.ContentEncoding, ContentLanguage: opts.ContentLanguage,
		ContentType: contentType, DisableContentTypeDetection: contentType == "",
		ContentMD5: opts.ContentMD5, Metadata: opts.Metadata,
		BeforeWrite: opts.BeforeWrite, IfNotExist: opts.IfNotExist,
	})
}

func (d *slowBucket) Copy(ctx context.Context, dstKey, srcKey string, opts *driver.CopyOptions) error {
	return d.b.Copy(ctx, dstKey, srcKey, &blob.CopyOptions{BeforeCopy: opts.BeforeCopy})
}

func (d *slowBucket) Delete(ctx context.Context, key string) error { return d.b.Delete(ctx, key) }

func (d *slowBucket) SignedURL(ctx context.Context, key string, opts *driver.SignedURLOptions) (string, error) {
	return "", errors.New("no signed URLs")
}
