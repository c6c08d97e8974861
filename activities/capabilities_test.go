package activities

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/llm"
	"github.com/agenttask/agenttask/schema"
)

func TestCapabilityTool(t *testing.T) {
	params := `{"type":"object","properties":{"order_id":{"type":"string","description":"The order."},"amount":{"type":"number"}},"required":["order_id","amount"],"additionalProperties":false}`
	refund := schema.Capability{Name: "refund", Kind: schema.CapabilityActivity, Activity: "IssueRefund", TaskQueue: "payments",
		Description: "Refund an order.", Parameters: json.RawMessage(params), ApprovalCondition: "args.amount > 100"}
	tool := CapabilityTool(refund)
	require.Equal(t, "refund", tool.Name)
	require.Equal(t, "Refund an order.", tool.Description)
	b, err := json.Marshal(tool.Parameters)
	require.NoError(t, err)
	require.JSONEq(t, params, string(b))

	// No parameters: any object; no description: one naming the activity.
	tool = CapabilityTool(schema.Capability{Name: "lookup", Kind: schema.CapabilityActivity, Activity: "LookupOrder"})
	require.Equal(t, llm.Tool{Name: "lookup", Description: `Run the action "LookupOrder" and get its result.`, Parameters: map[string]any{"type": "object"}}, tool)

	// A delegate capability is offered as before.
	paint := schema.Capability{Name: "paint", Kind: schema.CapabilityDelegate, Agent: &schema.AgentSpec{Name: "painter", Model: "demo/offline"}, Approval: schema.ApprovalAlways}
	tool = CapabilityTool(paint)
	require.Equal(t, `Hand a request to the agent "painter" and get its answer.`, tool.Description)
	require.Equal(t, DelegateParameters, tool.Parameters)
	paint.Description = "Ask the painter."
	require.Equal(t, "Ask the painter.", CapabilityTool(paint).Description)
}
