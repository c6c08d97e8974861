package activities_test

import (
	"bytes"
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/testsuite"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
	"github.com/agenttask/agenttask/internal/mount"
)

// A copy between mounts reports its bytes in its heartbeat details (what
// the Web UI's Pending Activities tab shows): the file, its bytes so far
// growing during the copy, then the files and bytes done.
func TestCopyFilesHeartbeatsItsProgress(t *testing.T) {
	const size = 24 << 20 // three of the store's 8 MiB heartbeat steps
	mounts := mount.Mounts{"src": "file://" + t.TempDir(), "dst": "file://" + t.TempDir()}
	store := mount.NewStore()
	t.Cleanup(func() { _ = store.Close() })
	src := contract.MountSpec{Root: "task", Name: "src"}
	spec, err := mounts.Resolve("src", src)
	require.NoError(t, err)
	part, _, err := store.Upload(context.Background(), spec, "t-src", "big.bin", "application/octet-stream", bytes.NewReader(make([]byte, size)))
	require.NoError(t, err)

	// The details as the activity records them (before the SDK batches
	// heartbeats to the server): an outbound interceptor sees each call.
	rec := &heartbeats{}
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.SetWorkerOptions(sdkworker.Options{Interceptors: []interceptor.WorkerInterceptor{rec}})
	a := &activities.Activities{Files: store, Mounts: mounts}
	env.RegisterActivity(a.CopyFiles)
	_, err = env.ExecuteActivity(a.CopyFiles, activities.CopyFilesInput{
		Src: src, SrcTask: "t-src", Parts: []contract.ContentPart{part},
		Dst: contract.MountSpec{Root: "task", Name: "dst"}, DstTask: "t-dst"})
	require.NoError(t, err)

	rec.mu.Lock()
	defer rec.mu.Unlock()
	beats := rec.beats
	require.NotEmpty(t, beats)
	var mid int
	for _, b := range beats {
		require.Equal(t, "task://big.bin", b.File)
		require.Equal(t, 1, b.Files)
		if b.FilesDone == 0 && b.FileBytes > 0 && b.FileBytes < size {
			require.Equal(t, int64(size), b.FileSize)
			mid++
		}
	}
	require.GreaterOrEqual(t, mid, 2, "bytes done reported during the copy: %+v", beats)
	last := beats[len(beats)-1]
	require.Equal(t, activities.CopyProgress{File: "task://big.bin", FileBytes: size, FileSize: size, FilesDone: 1, Files: 1, BytesDone: size}, last)
}

// heartbeats records the CopyProgress details of each RecordHeartbeat.
type heartbeats struct {
	interceptor.WorkerInterceptorBase
	mu    sync.Mutex
	beats []activities.CopyProgress
}

func (h *heartbeats) InterceptActivity(ctx context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &heartbeatsIn{ActivityInboundInterceptorBase: interceptor.ActivityInboundInterceptorBase{Next: next}, h: h}
}

type heartbeatsIn struct {
	interceptor.ActivityInboundInterceptorBase
	h *heartbeats
}

func (i *heartbeatsIn) Init(out interceptor.ActivityOutboundInterceptor) error {
	return i.Next.Init(&heartbeatsOut{ActivityOutboundInterceptorBase: interceptor.ActivityOutboundInterceptorBase{Next: out}, h: i.h})
}

type heartbeatsOut struct {
	interceptor.ActivityOutboundInterceptorBase
	h *heartbeats
}

func (o *heartbeatsOut) RecordHeartbeat(ctx context.Context, details ...interface{}) {
	if len(details) == 1 {
		if p, ok := details[0].(activities.CopyProgress); ok {
			o.h.mu.Lock()
			o.h.beats = append(o.h.beats, p)
			o.h.mu.Unlock()
		}
	}
	o.Next.RecordHeartbeat(ctx, details...)
}
