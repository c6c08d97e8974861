package activities

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/llm"
)

func TestCapabilityTool(t *testing.T) {
	params := `{"type":"object","properties":{"order_id":{"type":"string","description":"The order."},"amount":{"type":"number"}},"required":["order_id","amount"],"additionalProperties":false}`
	refund := contract.Capability{Name: "refund", Kind: contract.CapabilityActivity, Activity: "IssueRefund", TaskQueue: "payments",
		Description: "Refund an order.", Parameters: json.RawMessage(params), ApprovalCondition: "args.amount > 100"}
	tool := CapabilityTool(refund)
	require.Equal(t, "refund", tool.Name)
	require.Equal(t, "Refund an order.", tool.Description)
	b, err := json.Marshal(tool.Parameters)
	require.NoError(t, err)
	require.JSONEq(t, params, string(b))

	// No parameters: any object; no description: one naming the activity.
	tool = CapabilityTool(contract.Capability{Name: "lookup", Kind: contract.CapabilityActivity, Activity: "LookupOrder"})
	require.Equal(t, llm.Tool{Name: "lookup", Description: `Run the action "LookupOrder" and get its result.`, Parameters: map[string]any{"type": "object"}}, tool)

	// A delegate capability is offered as before.
	paint := contract.Capability{Name: "paint", Kind: contract.CapabilityDelegate, Agent: &contract.AgentSpec{Name: "painter", Model: "demo/offline"}, Approval: contract.ApprovalAlways}
	tool = CapabilityTool(paint)
	require.Equal(t, `Hand a request to the agent "painter" and get its answer.`, tool.Description)
	require.Equal(t, DelegateParameters, tool.Parameters)
	paint.Description = "Ask the painter."
	require.Equal(t, "Ask the painter.", CapabilityTool(paint).Description)
}
