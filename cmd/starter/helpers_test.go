package main

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/mocks"

	"github.com/agenttask/agenttask/contract"
)

// The starter package's test helpers the command's tests use (copies:
// test files of another package cannot be imported).

var ctx = context.Background()

// jsonValue is a query result decoded as the JSON data converter would.
func jsonValue(t *testing.T, v any) *mocks.Value {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	val := mocks.NewEncodedValue(t)
	val.On("Get", mock.Anything).Return(func(ptr any) error { return json.Unmarshal(b, ptr) }).Maybe()
	return val
}

func pending() contract.Approval {
	return contract.Approval{ID: "t3.c1", Capability: "refund", Arguments: json.RawMessage(`{"order":"A-1","amount":120}`),
		Turn: 3, RequestedAt: "2026-12-01T10:00:00.000000Z"}
}

func decided(approve bool, reason, by string) contract.Approval {
	a := pending()
	a.Decision = &contract.Decision{Approve: approve, Reason: reason, By: by, DecidedAt: "2026-12-01T10:05:00.000000Z"}
	return a
}

// decideHandle answers the decide update with a (or fails with err).
func decideHandle(t *testing.T, a contract.Approval, err error) *mocks.WorkflowUpdateHandle {
	h := mocks.NewWorkflowUpdateHandle(t)
	if err != nil {
		h.On("Get", mock.Anything, mock.Anything).Return(err)
		return h
	}
	h.On("Get", mock.Anything, mock.Anything).Return(func(_ context.Context, ptr any) error {
		*ptr.(*contract.Approval) = a
		return nil
	})
	return h
}
