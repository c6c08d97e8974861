// Package definitions stores the Tasks API's prompts and task definitions in
// Temporal itself (docs/tasks-api.md#storage-in-temporal), so a team that
// runs Temporal runs no other database. Each stored thing is an entity
// workflow: changes arrive as updates whose validators refuse a bad change
// before anything is written, reads are queries.
//
//	<prefix>index                   TaskIndex: the project's task and prompt names (uniqueness, the 100-task limit)
//	<prefix>task/<name>             TaskDefinition: one task's definition and who changed it when
//	<prefix>prompt/<name>           Prompt: a prompt's versions (numbers, variables, times)
//	<prefix>prompt/<name>/v<n>      PromptVersion: one version's text, immutable
//
// A project is the Temporal namespace. Every workflow's state stays small:
// texts live one per PromptVersion workflow, definitions one per task, the
// index holds names only; each continues as new when its history grows.
//
// This file is the contract: workflow, update and query names are API.
package definitions

import "encoding/json"

// Workflow types.
const (
	IndexWorkflow         = "TaskIndex"
	TaskWorkflow          = "TaskDefinition"
	PromptWorkflow        = "Prompt"
	PromptVersionWorkflow = "PromptVersion"
)

// Updates and queries.
const (
	UpdateReserveTask = "reserve-task" // arg: name; refused with task_exists or task_limit
	UpdateReleaseTask = "release-task" // arg: name
	UpdateAddPrompt   = "add-prompt"   // arg: name (idempotent)
	UpdatePut         = "put"          // arg: Change; returns Stored
	UpdateDelete      = "delete"       // arg: Change (By only)
	UpdateAddVersion  = "add-version"  // arg: NewVersion; returns PromptVersion

	QueryTasks   = "tasks"   // TaskIndex: sorted task names
	QueryPrompts = "prompts" // TaskIndex: sorted prompt names
	QueryGet     = "get"     // TaskDefinition: Stored; Prompt: PromptInfo; PromptVersion: PromptVersion
)

// Error codes carried as the type of the errors the store returns (the HTTP
// layer maps them to problem documents).
const (
	CodeTaskExists     = "task_exists"
	CodeTaskLimit      = "task_limit"
	CodeTaskNotFound   = "task_not_found"
	CodePromptNotFound = "prompt_not_found"
)

// MaxTasks is how many tasks a project holds.
const MaxTasks = 100

// Stored is a task definition as stored: the definition (validated by the
// caller) and who changed it when. By names a key by its stable ID.
type Stored struct {
	Definition json.RawMessage `json:"definition"`
	CreatedBy  string          `json:"createdBy"`
	CreatedAt  string          `json:"createdAt"`
	UpdatedBy  string          `json:"updatedBy"`
	UpdatedAt  string          `json:"updatedAt"`
	Deleted    bool            `json:"deleted,omitempty"`
}

// Change is the argument of put and delete.
type Change struct {
	Definition json.RawMessage `json:"definition,omitempty"`
	By         string          `json:"by"`
}

// NewVersion is the argument of add-version.
type NewVersion struct {
	Text      string   `json:"text"`
	Variables []string `json:"variables"`
	By        string   `json:"by"`
}

// PromptVersion is one version of a prompt; Text is empty in listings.
type PromptVersion struct {
	Name      string   `json:"name"`
	Version   int      `json:"version"`
	Variables []string `json:"variables"`
	CreatedAt string   `json:"createdAt"`
	CreatedBy string   `json:"createdBy,omitempty"`
	Text      string   `json:"text,omitempty"`
}

// PromptInfo is a prompt and its versions, oldest first, without texts.
type PromptInfo struct {
	Name          string          `json:"name"`
	LatestVersion int             `json:"latestVersion"`
	Versions      []PromptVersion `json:"versions"`
}
