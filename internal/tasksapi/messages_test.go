package tasksapi

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/definitions"
)

// loadingClient answers the messages query MESSAGES_LOADING loading times,
// then with one entry.
type loadingClient struct {
	client.Client
	loading int
	queries int
}

func (c *loadingClient) QueryWorkflow(ctx context.Context, id, runID, name string, args ...any) (converter.EncodedValue, error) {
	c.queries++
	if c.queries <= c.loading {
		return nil, serviceerror.NewQueryFailed(contract.ErrMessagesLoading + ": earlier messages are being loaded from storage; retry the query in a moment")
	}
	p, err := converter.GetDefaultDataConverter().ToPayloads([]contract.Message{{Type: contract.TypeOutput, TaskIO: contract.TaskIO{Message: contract.TextParts("hi")}}})
	if err != nil {
		return nil, err
	}
	return client.NewValue(p), nil
}

// A slow store delays the answer: MESSAGES_LOADING is asked again.
func TestMessagesRetriedWhileLoading(t *testing.T) {
	c := &loadingClient{loading: 2}
	s := &server{cfg: Config{Store: &definitions.Store{C: c}}}
	var out []contract.Message
	require.NoError(t, s.queryMessages(context.Background(), "run-x", &out, contract.MessagesPage{}))
	require.Len(t, out, 1)
	require.Equal(t, 3, c.queries)
}

// A store that stays slow answers 503 unavailable, a problem document.
func TestMessagesStillLoadingIsUnavailable(t *testing.T) {
	c := &loadingClient{loading: 1 << 30}
	s := &server{cfg: Config{Store: &definitions.Store{C: c}}}
	ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
	defer cancel()
	var out []contract.Message
	err := s.queryMessages(ctx, "run-x", &out, contract.MessagesPage{})
	var p *Problem
	require.True(t, errors.As(err, &p), "%v", err)
	require.Equal(t, http.StatusServiceUnavailable, p.Status)
	require.Equal(t, CodeUnavailable, p.Code)
	require.Contains(t, p.Detail, "retry in a moment")
	require.GreaterOrEqual(t, c.queries, 2)
}
