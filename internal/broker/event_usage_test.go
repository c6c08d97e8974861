package broker

import (
	"encoding/json"
	"testing"

	"github.com/agenttask/agenttask/contract"
)

// A done event's usage is contract.Usage: its JSON is what the broker's
// own usage struct wrote (the string below), so readers of either build
// read the other's events.
func TestADoneEventsUsageEncodesAsBefore(t *testing.T) {
	e := Event{Type: TypeDone, Turn: 1, StopReason: "end", Usage: &contract.Usage{InputTokens: 3, OutputTokens: 4, CacheReadTokens: 2}}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"turn":1,"type":"done","stopReason":"end","usage":{"inputTokens":3,"outputTokens":4,"cacheReadTokens":2}}`; string(b) != want {
		t.Fatalf("got %s, want %s", b, want)
	}
}
