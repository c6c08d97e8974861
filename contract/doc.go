// Package contract holds the runtime's public contract types: the shapes a
// caller and a task exchange (TaskIO, ContentPart, the
// messages a task lists, the agent spec with its capabilities, mount and
// schemas, the AgentTask workflow's names, arguments and replies, the typed
// errors) and the pure, deterministic checks on them, what a team builds
// on. It is a public package a team may import, beside the Go client
// (package starter) and the worker.
//
// Workflow code, activities, the Go client and the Tasks API all validate
// with this package, so every caller gets the same refusals. Names, JSON
// keys and error types are API: add, never rename.
package contract
