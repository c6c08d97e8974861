package tasksapi

import (
	"encoding/json"
	"strings"
)

// A2A v1.0's JSON-RPC binding, as the official SDKs write it (ProtoJSON of
// lf.a2a.v1: lowerCamel keys, enums by name). Only what the server reads
// and writes is declared.

const (
	a2aVersion = "1.0"

	a2aStateSubmitted     = "TASK_STATE_SUBMITTED"
	a2aStateWorking       = "TASK_STATE_WORKING"
	a2aStateCompleted     = "TASK_STATE_COMPLETED"
	a2aStateFailed        = "TASK_STATE_FAILED"
	a2aStateCanceled      = "TASK_STATE_CANCELED"
	a2aStateInputRequired = "TASK_STATE_INPUT_REQUIRED"

	a2aRoleUser  = "ROLE_USER"
	a2aRoleAgent = "ROLE_AGENT"
)

// JSON-RPC and A2A error codes (A2A v1.0, section 5.4).
const (
	rpcParseError     = -32700
	rpcInvalidRequest = -32600
	rpcMethodNotFound = -32601
	rpcInvalidParams  = -32602
	rpcInternalError  = -32603

	a2aTaskNotFound          = -32001
	a2aTaskNotCancelable     = -32002
	a2aPushNotSupported      = -32003
	a2aUnsupportedOperation  = -32004
	a2aContentTypeNotSupport = -32005
)

type rpcRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return e.Message }

type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

type a2aPart struct {
	Text      *string         `json:"text,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	URL       string          `json:"url,omitempty"`
	MediaType string          `json:"mediaType,omitempty"`
}

type a2aMessage struct {
	MessageID string          `json:"messageId"`
	ContextID string          `json:"contextId,omitempty"`
	TaskID    string          `json:"taskId,omitempty"`
	Role      json.RawMessage `json:"role"` // "ROLE_USER" (or its number, from some writers)
	Parts     []a2aPart       `json:"parts"`
	Metadata  map[string]any  `json:"metadata,omitempty"`
}

// text is the message's text parts, joined.
func (m a2aMessage) text() string {
	var b []string
	for _, p := range m.Parts {
		if p.Text != nil {
			b = append(b, *p.Text)
		}
	}
	return strings.Join(b, "\n")
}

type a2aStatus struct {
	State     string      `json:"state"`
	Message   *a2aMessage `json:"message,omitempty"`
	Timestamp string      `json:"timestamp,omitempty"`
}

type a2aArtifact struct {
	ArtifactID string    `json:"artifactId"`
	Name       string    `json:"name,omitempty"`
	Parts      []a2aPart `json:"parts"`
}

type a2aTask struct {
	ID        string         `json:"id"`
	ContextID string         `json:"contextId"`
	Status    a2aStatus      `json:"status"`
	Artifacts []a2aArtifact  `json:"artifacts,omitempty"`
	History   []a2aMessage   `json:"history,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// terminal reports whether the task's state ends it.
func (t a2aTask) terminal() bool {
	switch t.Status.State {
	case a2aStateCompleted, a2aStateFailed, a2aStateCanceled:
		return true
	}
	return false
}

type a2aSendParams struct {
	Message       *a2aMessage `json:"message"`
	Configuration *struct {
		ReturnImmediately bool `json:"returnImmediately"`
	} `json:"configuration"`
	Metadata map[string]any `json:"metadata"`
}

type a2aTaskParams struct {
	ID string `json:"id"`
}

type a2aStatusUpdate struct {
	TaskID    string    `json:"taskId"`
	ContextID string    `json:"contextId"`
	Status    a2aStatus `json:"status"`
}

type a2aArtifactUpdate struct {
	TaskID    string      `json:"taskId"`
	ContextID string      `json:"contextId"`
	Artifact  a2aArtifact `json:"artifact"`
	LastChunk bool        `json:"lastChunk"`
}

func textPart(s string) a2aPart { return a2aPart{Text: &s, MediaType: "text/plain"} }
