package tasksapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"reflect"

	"github.com/danielgtaylor/huma/v2"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/catalog"
	"github.com/agenttask/agenttask/internal/definitions"
	"github.com/agenttask/agenttask/internal/taskdef"
)

// Task is a task as the API reads it back (docs/tasks-api.md#tasks).
type Task struct {
	Name            string                      `json:"name"`
	Description     string                      `json:"description"`
	Prompt          TaskPrompt                  `json:"prompt"`
	Model           string                      `json:"model"`
	MaxTokens       int                         `json:"maxTokens"`
	Temperature     *float64                    `json:"temperature" nullable:"true"`
	TopP            *float64                    `json:"topP" nullable:"true"`
	ReasoningEffort string                      `json:"reasoningEffort"`
	JSON            bool                        `json:"json"`
	Schema          json.RawMessage             `json:"schema" nullable:"true"`
	Input           taskdef.InputLimits         `json:"input"`
	Variables       map[string]taskdef.Variable `json:"variables"`
	History         taskdef.HistoryLimits       `json:"history"`
	Enabled         bool                        `json:"enabled"`
	WorstCase       catalog.WorstCase           `json:"worstCase"`
	Budget          *contract.Budget            `json:"budget,omitempty" doc:"An extension of seed 004 (docs/budgets.md): what each run may spend on model calls, unless its request gives its own budget; absent: runs are unbounded"`
	Capabilities    []contract.Capability       `json:"capabilities,omitempty" doc:"An extension of seed 004 (docs/tasks-api.md#capabilities): the tools each run's model may call, capabilities of kind mcp or activity as an agent's (docs/contract.md), approvals included"`
	CreatedBy       string                      `json:"createdBy"`
	CreatedAt       string                      `json:"createdAt"`
	UpdatedBy       string                      `json:"updatedBy"`
	UpdatedAt       string                      `json:"updatedAt"`
}

// TaskPrompt is the prompt a task uses, and the prompt's newest version.
type TaskPrompt struct {
	Name          string `json:"name"`
	Version       int    `json:"version"`
	LatestVersion int    `json:"latestVersion"`
}

// storedTask is what the store keeps of a task: the checked definition and
// the input side of its worst case (the pinned prompt version never changes;
// prices are read from the catalogue at each read).
type storedTask struct {
	Definition  taskdef.Definition `json:"definition"`
	InputTokens int64              `json:"inputTokens"`
}

type taskIn struct {
	Name string `path:"name" pattern:"^[a-z0-9][a-z0-9-]{0,62}$" doc:"The task's name"`
}

// bodyIn takes the body raw: the seed's rules (and their field names) are
// checked by package taskdef, not by a generic schema validator.
type bodyIn struct {
	ContentType string `header:"Content-Type"`
	RawBody     []byte
}

// putIn is taskIn and bodyIn (huma reads no parameters of embedded structs).
type putIn struct {
	Name        string `path:"name" pattern:"^[a-z0-9][a-z0-9-]{0,62}$" doc:"The task's name"`
	ContentType string `header:"Content-Type"`
	RawBody     []byte
}

type taskOut struct {
	Body struct {
		Data Task `json:"data"`
	}
}

type tasksOut struct {
	Body struct {
		Data []Task `json:"data"`
	}
}

// jsonBody describes a request body in the OpenAPI description.
func jsonBody(api huma.API, v any) *huma.RequestBody {
	s := api.OpenAPI().Components.Schemas.Schema(reflect.TypeOf(v), true, "")
	return &huma.RequestBody{Required: true, Content: map[string]*huma.MediaType{"application/json": {Schema: s}}}
}

// checkJSON refuses a body that is not sent as JSON.
func checkJSON(contentType string) error {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil || (mt != "application/json" && mt != "application/merge-patch+json") {
		return problem(CodeValidationFailed, fmt.Sprintf("send the body as application/json (Content-Type was %q)", contentType), "", http.StatusUnsupportedMediaType)
	}
	return nil
}

func (s *server) registerTasks() {
	create := op("createTask", http.MethodPost, "/v1/tasks", PermDevelop, "Create a task", http.StatusCreated,
		http.StatusConflict, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType)
	create.RequestBody = jsonBody(s.api, taskdef.Definition{})
	create.SkipValidateBody = true // taskdef checks it, naming fields as the seed does
	huma.Register(s.api, create, func(ctx context.Context, in *bodyIn) (*taskOut, error) {
		st, err := s.checkedTask(ctx, in.ContentType, in.RawBody, "")
		if err != nil {
			return nil, err
		}
		raw, _ := json.Marshal(st)
		stored, err := s.defs.CreateTask(ctx, st.Definition.Name, raw, caller(ctx))
		if err != nil {
			return nil, fromStore(err)
		}
		return s.taskAnswer(ctx, stored)
	})

	huma.Register(s.api, op("listTasks", http.MethodGet, "/v1/tasks", PermView, "List the tasks, by name", http.StatusOK),
		func(ctx context.Context, _ *struct{}) (*tasksOut, error) {
			_, all, err := s.cfg.Store.ListTasks(ctx)
			if err != nil {
				return nil, fromStore(err)
			}
			out := &tasksOut{}
			out.Body.Data = []Task{}
			latest := map[string]int{}
			for _, st := range all {
				t, err := s.view(ctx, st, latest)
				if err != nil {
					return nil, err
				}
				out.Body.Data = append(out.Body.Data, t)
			}
			return out, nil
		})

	get := op("getTask", http.MethodGet, "/v1/tasks/{name}", PermView, "Read a task", http.StatusOK, http.StatusNotFound)
	huma.Register(s.api, get, func(ctx context.Context, in *taskIn) (*taskOut, error) {
		stored, err := s.defs.GetTask(ctx, in.Name)
		if err != nil {
			return nil, fromStore(err)
		}
		return s.taskAnswer(ctx, stored)
	})

	put := op("putTask", http.MethodPut, "/v1/tasks/{name}", PermDevelop, "Change a task: send every field, as for creating one", http.StatusOK,
		http.StatusNotFound, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType)
	put.RequestBody = jsonBody(s.api, taskdef.Definition{})
	put.SkipValidateBody = true
	huma.Register(s.api, put, func(ctx context.Context, in *putIn) (*taskOut, error) {
		st, err := s.checkedTask(ctx, in.ContentType, in.RawBody, in.Name)
		if err != nil {
			return nil, err
		}
		raw, _ := json.Marshal(st)
		stored, err := s.defs.PutTask(ctx, in.Name, raw, caller(ctx))
		if err != nil {
			return nil, fromStore(err)
		}
		return s.taskAnswer(ctx, stored)
	})

	del := op("deleteTask", http.MethodDelete, "/v1/tasks/{name}", PermDevelop, "Delete a task; its runs are then refused with task_not_found", http.StatusNoContent, http.StatusNotFound)
	huma.Register(s.api, del, func(ctx context.Context, in *taskIn) (*struct{}, error) {
		if err := s.defs.DeleteTask(ctx, in.Name, caller(ctx)); err != nil {
			return nil, fromStore(err)
		}
		return nil, nil
	})
}

// checkedTask decodes and checks a task body against the seed's rules, its
// prompt version and the catalogue. path is the task's name in a PUT.
func (s *server) checkedTask(ctx context.Context, contentType string, body []byte, path string) (storedTask, error) {
	var st storedTask
	if err := checkJSON(contentType); err != nil {
		return st, err
	}
	d, fe := taskdef.Decode(body)
	if fe != nil {
		return st, invalid(fe.Field, fe.Detail)
	}
	if path != "" && d.Name != path {
		return st, invalid("name", fmt.Sprintf("the body names task %q but the path names %q; a task's name cannot change", d.Name, path))
	}
	var vars []string
	text := ""
	if fe := taskdef.CheckName("prompt.name", d.Prompt.Name); fe == nil && d.Prompt.Version >= 1 {
		p, err := s.cfg.Store.GetPrompt(ctx, d.Prompt.Name)
		var se *definitions.Error
		switch {
		case errors.As(err, &se) && se.Code == definitions.CodePromptNotFound:
			return st, invalid("prompt.name", fmt.Sprintf("no prompt named %q; store one with POST /v1/prompts/%s/versions", d.Prompt.Name, d.Prompt.Name))
		case err != nil:
			return st, fromStore(err)
		case d.Prompt.Version > p.LatestVersion:
			return st, invalid("prompt.version", fmt.Sprintf("prompt %q has versions 1 to %d", d.Prompt.Name, p.LatestVersion))
		}
		v, err := s.defs.GetPromptVersion(ctx, d.Prompt.Name, d.Prompt.Version)
		if err != nil {
			return st, fromStore(err)
		}
		vars, text = v.Variables, v.Text
	}
	if fe := taskdef.Validate(&d, vars, catalogModels{s.cfg.Catalog}); fe != nil {
		return st, invalid(fe.Field, fe.Detail)
	}
	if err := s.checkCapabilities(d); err != nil {
		return st, err
	}
	// A run sends the filled prompt as the agent's instructions, which the
	// runtime bounds (with the schema) by contract.MaxAgentSpecBytes.
	if n := int(taskdef.InstructionsWorstCase(d, text)) + len(d.Schema); n > maxInstructionsBytes {
		return st, invalid("prompt", fmt.Sprintf("the prompt filled at the most its variables allow, with the schema, is %d bytes; a run takes at most %d: use a shorter prompt or smaller variables", n, maxInstructionsBytes))
	}
	return storedTask{Definition: d, InputTokens: taskdef.InputTokensWorstCase(d, text)}, nil
}

func (s *server) taskAnswer(ctx context.Context, stored definitions.Stored) (*taskOut, error) {
	t, err := s.view(ctx, stored, map[string]int{})
	if err != nil {
		return nil, err
	}
	out := &taskOut{}
	out.Body.Data = t
	return out, nil
}

// view is a stored task as the API reads it: with its prompt's newest
// version (latest caches them per request) and its worst case at the
// catalogue's current prices.
func (s *server) view(ctx context.Context, stored definitions.Stored, latest map[string]int) (Task, error) {
	var st storedTask
	if err := json.Unmarshal(stored.Definition, &st); err != nil {
		return Task{}, problem(CodeInternal, "a stored task does not decode: "+err.Error(), "")
	}
	d := st.Definition
	n, ok := latest[d.Prompt.Name]
	if !ok {
		p, err := s.cfg.Store.GetPrompt(ctx, d.Prompt.Name)
		if err != nil {
			return Task{}, fromStore(err)
		}
		n = p.LatestVersion
		latest[d.Prompt.Name] = n
	}
	t := Task{
		Name: d.Name, Description: d.Description, Prompt: TaskPrompt{Name: d.Prompt.Name, Version: d.Prompt.Version, LatestVersion: n},
		Model: d.Model, MaxTokens: d.MaxTokens, Temperature: d.Temperature, TopP: d.TopP, ReasoningEffort: d.ReasoningEffort,
		JSON: d.JSON, Schema: d.Schema, Input: d.Input, Variables: d.Variables, Enabled: d.Enabled == nil || *d.Enabled, Budget: d.Budget, Capabilities: d.Capabilities,
		CreatedBy: stored.CreatedBy, CreatedAt: stored.CreatedAt, UpdatedBy: stored.UpdatedBy, UpdatedAt: stored.UpdatedAt,
	}
	if d.History != nil {
		t.History = *d.History
	}
	if t.Variables == nil {
		t.Variables = map[string]taskdef.Variable{}
	}
	// Every call a run may make (worstcase.go), at the catalogue's prices.
	if m, ok := s.cfg.Catalog.Get(d.Model); ok {
		t.WorstCase = runWorstCase(m, d, st.InputTokens)
	} else {
		t.WorstCase = unpricedWorstCase(d, st.InputTokens) // the model left the catalogue: no price
	}
	return t, nil
}

// catalogModels shows the catalogue to taskdef.Validate.
type catalogModels struct{ c *catalog.Catalog }

type modelInfo struct{ m catalog.Model }

func (m modelInfo) MaxTokens() int  { return m.m.MaxTokens }
func (m modelInfo) Reasoning() bool { return m.m.Reasoning }

func (c catalogModels) Lookup(name string) (taskdef.ModelInfo, bool) {
	m, ok := c.c.Get(name)
	return modelInfo{m}, ok
}

// maxInstructionsBytes leaves room in contract.MaxAgentSpecBytes for the rest
// of the agent a run starts (and for JSON escaping of ordinary text).
const maxInstructionsBytes = contract.MaxAgentSpecBytes - 16_000
