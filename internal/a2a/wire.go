// Package a2a is the Agent2Agent protocol (A2A v1.0, JSON-RPC binding) as
// both sides of the product speak it: the wire types the Tasks API's
// /a2a/{name}/ server writes, and the client the a2a capability calls a
// remote agent with, over the agents the worker's operator lists
// (AGENT_A2A_AGENTS). No official Go SDK speaks v1.0 yet (a2a-go v0.3.3
// speaks v0.3), so the few messages used are declared here.
package a2a

import (
	"encoding/json"
	"fmt"
	"strings"
)

// A2A v1.0's JSON-RPC binding, as the official SDKs write it (ProtoJSON of
// lf.a2a.v1: lowerCamel keys, enums by name). Only what our server
// (internal/tasksapi) and our client (client.go) read and write is declared.

const (
	Version = "1.0"

	StateSubmitted     = "TASK_STATE_SUBMITTED"
	StateWorking       = "TASK_STATE_WORKING"
	StateCompleted     = "TASK_STATE_COMPLETED"
	StateFailed        = "TASK_STATE_FAILED"
	StateCanceled      = "TASK_STATE_CANCELED"
	StateInputRequired = "TASK_STATE_INPUT_REQUIRED"
	StateRejected      = "TASK_STATE_REJECTED"
	StateAuthRequired  = "TASK_STATE_AUTH_REQUIRED"

	RoleUser  = "ROLE_USER"
	RoleAgent = "ROLE_AGENT"
)

// JSON-RPC and A2A error codes (A2A v1.0, section 5.4).
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603

	CodeTaskNotFound            = -32001
	CodeTaskNotCancelable       = -32002
	CodePushNotSupported        = -32003
	CodeUnsupportedOperation    = -32004
	CodeContentTypeNotSupported = -32005
)

type RPCRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

type RPCError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *RPCError) Error() string { return e.Message }

type RPCResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *RPCError       `json:"error,omitempty"`
}

type Part struct {
	Text      *string         `json:"text,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	URL       string          `json:"url,omitempty"`
	MediaType string          `json:"mediaType,omitempty"`
}

type Message struct {
	MessageID string          `json:"messageId"`
	ContextID string          `json:"contextId,omitempty"`
	TaskID    string          `json:"taskId,omitempty"`
	Role      json.RawMessage `json:"role"` // "ROLE_USER" (or its number, from some writers)
	Parts     []Part          `json:"parts"`
	Metadata  map[string]any  `json:"metadata,omitempty"`
}

// text is the message's text parts, joined.
func (m Message) Text() string {
	var b []string
	for _, p := range m.Parts {
		if p.Text != nil {
			b = append(b, *p.Text)
		}
	}
	return strings.Join(b, "\n")
}

type Status struct {
	State     string   `json:"state"`
	Message   *Message `json:"message,omitempty"`
	Timestamp string   `json:"timestamp,omitempty"`
}

type Artifact struct {
	ArtifactID string `json:"artifactId"`
	Name       string `json:"name,omitempty"`
	Parts      []Part `json:"parts"`
}

type Task struct {
	ID        string         `json:"id"`
	ContextID string         `json:"contextId"`
	Status    Status         `json:"status"`
	Artifacts []Artifact     `json:"artifacts,omitempty"`
	History   []Message      `json:"history,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// Terminal reports whether the task's state ends it.
func (t Task) Terminal() bool {
	switch t.Status.State {
	case StateCompleted, StateFailed, StateCanceled, StateRejected:
		return true
	}
	return false
}

type SendParams struct {
	Message       *Message           `json:"message"`
	Configuration *SendConfiguration `json:"configuration,omitempty"`
	Metadata      map[string]any     `json:"metadata,omitempty"`
}

// SendConfiguration: ReturnImmediately answers with the task as soon as
// it exists, not once it ends (v0.3's blocking false).
type SendConfiguration struct {
	ReturnImmediately bool `json:"returnImmediately"`
}

type TaskParams struct {
	ID string `json:"id"`
}

type StatusUpdate struct {
	TaskID    string `json:"taskId"`
	ContextID string `json:"contextId"`
	Status    Status `json:"status"`
}

type ArtifactUpdate struct {
	TaskID    string   `json:"taskId"`
	ContextID string   `json:"contextId"`
	Artifact  Artifact `json:"artifact"`
	LastChunk bool     `json:"lastChunk"`
}

func TextPart(s string) Part { return Part{Text: &s, MediaType: "text/plain"} }

// Render is parts as a model reads them: text as it is, data as its JSON,
// a file by its URL (or its name and media type when it came inline).
func Render(parts []Part) string {
	var b []string
	for _, p := range parts {
		switch {
		case p.Text != nil:
			b = append(b, *p.Text)
		case len(p.Data) > 0:
			b = append(b, string(p.Data))
		case p.URL != "":
			b = append(b, fmt.Sprintf("[file %s (%s)]", p.URL, p.MediaType))
		default:
			b = append(b, fmt.Sprintf("[a file of type %s, not shown]", p.MediaType))
		}
	}
	return strings.Join(b, "\n")
}

// Answer is what a finished task says: its artifacts, then its status
// message.
func (t Task) Answer() string {
	var b []string
	for _, a := range t.Artifacts {
		if s := Render(a.Parts); s != "" {
			b = append(b, s)
		}
	}
	if t.Status.Message != nil {
		if s := Render(t.Status.Message.Parts); s != "" {
			b = append(b, s)
		}
	}
	return strings.Join(b, "\n\n")
}
