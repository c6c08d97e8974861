package tasksapi

import (
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"
)

// memoString reads a string field of a run's memo. The memo was written
// by the API's Temporal client, through its data converter: with codec keys
// (AGENT_CODEC_KEYS) its payloads are encrypted, so they are read through
// the same codec, never as plain JSON (which would make every run of an
// encrypted deployment look like one this API did not start). "" when the
// field is absent or unreadable.
func (s *server) memoString(d *workflowservice.DescribeWorkflowExecutionResponse, field string) string {
	p := d.GetWorkflowExecutionInfo().GetMemo().GetFields()[field]
	if p == nil {
		return ""
	}
	dc := converter.GetDefaultDataConverter()
	if s.cfg.Codec != nil {
		dc = s.cfg.Codec.DataConverter()
	}
	var v string
	if dc.FromPayload(p, &v) != nil {
		return ""
	}
	return v
}
