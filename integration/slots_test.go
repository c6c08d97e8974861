package integration

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"gocloud.dev/blob"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/faultblob"
)

// Sends whose arrival check waits out a storage outage hold Temporal's
// in-flight update slots (ten per workflow). At most MaxUpdatesInFlight
// sends and asks run at once; past it a send is refused QUEUE_BUSY at
// once, and raise-budget and decide, which a person sends to unblock the
// task, still find a slot and answer.
func TestUpdatesForPeopleAlwaysFindASlot(t *testing.T) {
	h := newHarness(t)
	sw := &faultblob.Switch{}
	h.wrapMount = func(b *blob.Bucket) *blob.Bucket { return faultblob.Wrap(b, sw) }
	h.startWorker()
	m := h.mountSpec("files")
	id := "update-slots"
	spec := agent("looker")
	spec["mount"] = m
	run := startTask(t, h, id, map[string]any{"agent": spec,
		"budget": map[string]any{"inputTokens": 1_000_000}})
	part := upload(t, m, id, "cat.png", "image/png", pngBytes)

	sw.On(nil) // every arrival check now waits the outage out
	const sends = 10
	var wg sync.WaitGroup
	errs := make([]error, sends)
	for i := range sends {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := map[string]any{"input_id": fmt.Sprint("file-", i),
				"message": []any{map[string]any{"mimeType": "text/plain", "text": fmt.Sprint("look ", i)}, partMap(part)}}
			_, errs[i] = sendUpdateWithin(t, id, in, 20*time.Second)
		}()
		time.Sleep(100 * time.Millisecond) // in order: the first ones take the slots
	}
	// Past the bound, sends are refused at once, naming the way out.
	eventually(t, 30*time.Second, "sends past the bound refused", func() bool {
		n := 0
		for _, err := range errs {
			if err != nil && errType(err) == contract.ErrQueueBusy {
				n++
			}
		}
		return n == sends-contract.MaxUpdatesInFlight
	})
	for _, err := range errs {
		if err != nil {
			require.Equal(t, contract.ErrQueueBusy, errType(err), "%v", err)
			require.ErrorContains(t, err, "retry in a second or two")
		}
	}
	// A person's updates still find a slot while the others wait.
	started, approve := time.Now(), true
	raise, err := sdk.UpdateWorkflow(ctxT(t, 15*time.Second), client.UpdateWorkflowOptions{
		WorkflowID: id, UpdateName: contract.UpdateRaiseBudget, WaitForStage: client.WorkflowUpdateStageCompleted,
		Args: []any{contract.RaiseBudgetArgs{Amounts: contract.Amounts{InputTokens: contract.Amount(1000)}, By: "ops"}}})
	require.NoError(t, err, "raise-budget found a slot")
	var st contract.BudgetStatus
	require.NoError(t, raise.Get(ctxT(t, 15*time.Second), &st))
	require.Equal(t, int64(1_001_000), *st.Limit.InputTokens)
	decide, err := sdk.UpdateWorkflow(ctxT(t, 15*time.Second), client.UpdateWorkflowOptions{
		WorkflowID: id, UpdateName: contract.UpdateDecide, WaitForStage: client.WorkflowUpdateStageCompleted,
		Args: []any{contract.DecideArgs{ID: "no-such-approval", Approve: &approve, By: "ops"}}})
	if err == nil {
		err = decide.Get(ctxT(t, 15*time.Second), nil)
	}
	require.Error(t, err, "there is no such approval")
	require.Equal(t, "APPROVAL_NOT_FOUND", errType(err), "decide was admitted and its validator answered: %v", err)
	t.Logf("raise-budget and decide answered in %s with %d sends in flight", time.Since(started).Round(time.Millisecond), contract.MaxUpdatesInFlight)

	sw.Off() // the waiting sends complete once storage is back
	wg.Wait()
	accepted := 0
	for _, err := range errs {
		if err == nil {
			accepted++
		}
	}
	require.Equal(t, contract.MaxUpdatesInFlight, accepted)
	closeAndWait(t, id)
	_ = run
}

// sendUpdateWithin is sendUpdate with a deadline of its own.
func sendUpdateWithin(t *testing.T, id string, in any, d time.Duration) (any, error) {
	h, err := sdk.UpdateWorkflow(ctxT(t, d), client.UpdateWorkflowOptions{
		WorkflowID: id, UpdateName: "send", Args: []any{in}, WaitForStage: client.WorkflowUpdateStageAccepted,
	})
	if err != nil {
		return nil, err
	}
	var res any
	err = h.Get(ctxT(t, 3*time.Minute), &res)
	return res, err
}
