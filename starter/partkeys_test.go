package starter

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/mocks"

	"github.com/agenttask/agenttask/contract"
)

// An input decoded from a caller's JSON whose part carries a key a part
// does not have ("bytes") is refused with INVALID_INPUT naming the key,
// before the server is called: decoding drops the key, so the task would
// otherwise take the part without it, unseen.
func TestInputsWithAnUnknownPartKeyAreRefusedBeforeTheServer(t *testing.T) {
	var in contract.TaskIO
	if err := json.Unmarshal([]byte(`{"message":[{"mimeType":"text/plain","text":"see attached","bytes":[1,2,3]}]}`), &in); err != nil {
		t.Fatal(err)
	}
	check := func(what string, err error) {
		t.Helper()
		se := wantType(t, err, contract.ErrInvalidInput)
		if !strings.Contains(se.Message, `message[0]: "bytes" is not a content-part key`) || !strings.Contains(se.Message, "file reference") {
			t.Errorf("%s: %q; want it to name the key and say what to do", what, se.Message)
		}
	}
	m := mocks.NewClient(t) // any call to the server fails the test
	c := New(m, "")
	_, err := c.Send(ctx, "t1", in)
	check("send", err)
	_, err = c.SendWithID(ctx, "t1", "req-1", in)
	check("send with ID", err)
	_, err = c.Ask(ctx, "t1", in)
	check("ask", err)
	check("signal", c.Signal(ctx, "t1", in))
	check("signal with ID", c.SignalWithID(ctx, "t1", "req-1", in))
	args := goodArgs()
	args.Input = &in
	id, err := c.Start(ctx, args, StartOptions{})
	check("start", err)
	if id != "" {
		t.Errorf("start returned ID %q", id)
	}
	m.AssertNotCalled(t, "UpdateWorkflow", mock.Anything, mock.Anything)
	m.AssertNotCalled(t, "SignalWorkflow", mock.Anything, mock.Anything, mock.Anything, mock.Anything, mock.Anything)
	m.AssertNotCalled(t, "ExecuteWorkflow", mock.Anything, mock.Anything, mock.Anything, mock.Anything)
}
