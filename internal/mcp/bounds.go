package mcp

// Bounds on what a server may hand a worker: a listing is recorded in the
// workflow's history and a result passes through an activity, so neither
// may grow without limit whatever the server does.
const (
	// MaxTools bounds the tools one server lists.
	MaxTools = 128
	// MaxInputSchemaBytes bounds one tool's input schema, as JSON.
	MaxInputSchemaBytes = 16 << 10
	// MaxDescriptionBytes is where a tool's description is cut.
	MaxDescriptionBytes = 1024
	// MaxResultBytes bounds a call result's data: its text, decoded
	// binary, URIs and structured content together.
	MaxResultBytes = 8 << 20
	// maxResponseBytes bounds one HTTP response body read from a server:
	// a result at MaxResultBytes, base64 (4/3) and JSON escaping included.
	maxResponseBytes = MaxResultBytes*3/2 + 1<<20
)
