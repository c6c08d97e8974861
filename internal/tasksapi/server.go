// Package tasksapi serves the Tasks API (docs/tasks-api.md) over HTTP:
// stored prompts and tasks, kept in Temporal by package definitions, and
// their runs.
//
// It is built on huma (github.com/danielgtaylor/huma/v2): operations are
// declared from Go types, so routing, request parsing, the OpenAPI 3.1
// description served at /openapi.json and the checked-in copy come from one
// place (oapi-codegen would have us keep a 3.0 document by hand and generate
// Go from it). Rules huma's schemas cannot say (the seed's byte limits,
// fields that depend on each other, the catalogue) are checked in handlers,
// and every refusal is a problem document with the seed's code.
package tasksapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"
	"go.temporal.io/sdk/worker"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/a2apush"
	"github.com/agenttask/agenttask/internal/broker"
	"github.com/agenttask/agenttask/internal/catalog"
	"github.com/agenttask/agenttask/internal/chatui"
	"github.com/agenttask/agenttask/internal/codec"
	"github.com/agenttask/agenttask/internal/definitions"
	"github.com/agenttask/agenttask/internal/transcript"
)

// Config is what the API needs.
type Config struct {
	Store   *definitions.Store
	Catalog *catalog.Catalog
	Keys    Keys
	// TaskQueue is where AgentTask runs (the workers' AGENT_TASK_QUEUE).
	TaskQueue string
	// RunTimeout bounds how long a run request waits for the answer
	// (AGENT_API_RUN_TIMEOUT, default 5m); the run goes on after it.
	RunTimeout time.Duration
	// ProcessedIn is the X-Ai-Processed-In header (AGENT_API_PROCESSED_IN).
	ProcessedIn string
	// Broker carries runs' streamed text from the workers (AGENT_NATS_URL);
	// nil: runs are not streamed and "stream": true is refused.
	Broker *broker.Broker
	// KeepAlive spaces the comment lines of a quiet stream (default 15s).
	KeepAlive time.Duration
	// Transcript, when set, is the workers' transcript store (their
	// AGENT_TRANSCRIPT_URL and AGENT_CODEC_KEYS), only read: a run's
	// messages are served from it once Temporal has removed the run's
	// execution (messages_transcript.go). nil: such a run is not found.
	Transcript *transcript.Store
	// RateLimit is how many calls a minute each key may make (ratelimit.go;
	// AGENT_API_RATE_LIMIT, which defaults to DefaultRateLimit); 0: no limit.
	RateLimit int
	// Codec, when set (AGENT_CODEC_KEYS), is the one the API's Temporal
	// client encodes with: runs' memos are read through it (memo.go).
	Codec *codec.Codec
	// MCPServers, when set, are the MCP servers the workers list: a task's
	// mcp capability must name one (ServeConfig.MCPServers).
	MCPServers []string
	// A2AAgents, when set, are the remote agents the workers list: a
	// task's a2a capability must name one (ServeConfig.A2AAgents).
	A2AAgents []string
	// PushWorker, when set, is the store's worker: A2A push notifications
	// are served, each A2A task's webhooks followed by a workflow on it
	// (a2apush.go); PushOptions are the operator's for them. Register
	// before the worker starts.
	PushWorker  worker.Registry
	PushOptions a2apush.Options
}

type server struct {
	cfg    Config
	keys   Keys
	limits *rateLimits // nil: no limit
	defs   *definitionCache
	api    huma.API
	push   *a2apush.Sender // nil: push notifications not served
}

// New returns the API's handler and its huma API (for the OpenAPI description).
func New(cfg Config) (http.Handler, huma.API) {
	hookErrors()
	mux := http.NewServeMux()
	hc := huma.DefaultConfig("Agent Tasks API", "1.0.0")
	hc.CreateHooks = nil // no $schema links in bodies: answers are {"data": ...}
	hc.DocsPath, hc.SchemasPath = "", ""
	hc.Components.SecuritySchemes = map[string]*huma.SecurityScheme{
		"bearer": {Type: "http", Scheme: "bearer", Description: "An API key (API_KEYS) or a developer key (DEVELOPER_KEYS)"},
	}
	if cfg.RunTimeout <= 0 {
		cfg.RunTimeout = DefaultRunTimeout
	}
	if cfg.ProcessedIn == "" {
		cfg.ProcessedIn = DefaultProcessedIn
	}
	if cfg.KeepAlive <= 0 {
		cfg.KeepAlive = DefaultKeepAlive
	}
	if cfg.TaskQueue == "" {
		cfg.TaskQueue = contract.DefaultTaskQueue
	}
	s := &server{cfg: cfg, keys: cfg.Keys, limits: newRateLimits(cfg.Keys, cfg.RateLimit),
		defs: newDefinitionCache(cfg.Store, taskCacheTTL)}
	mux.HandleFunc("GET /healthz", s.healthz)
	// The chat page: static files, no key; it calls the API
	// below with the key its user enters (internal/chatui, docs/ui.md).
	mux.Handle("GET /ui", chatui.Handler())
	mux.Handle("GET /ui/", chatui.Handler())
	s.registerMCP(mux) // every stored task as an MCP tool (mcpserver.go)
	s.registerA2A(mux) // and as an A2A agent (a2a.go)
	s.registerPush()   // with push notifications when it has a worker (a2apush.go)
	s.api = humago.New(mux, hc)
	s.api.UseMiddleware(s.authorize)
	s.registerPrompts()
	s.registerModels()
	s.registerTasks()
	s.registerEvents() // first: a run's answer lists the events it describes
	s.registerRuns()
	s.registerAGUI() // agui.go
	s.registerRunCalls()
	s.registerDelete() // delete.go
	describeCustomTypes(s.api)
	return problemsForUnknownRoutes(mux), s.api
}

// problemsForUnknownRoutes answers a path or method the API does not serve
// with a problem document too (ServeMux would answer plain text).
func problemsForUnknownRoutes(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern != "" {
			mux.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, r)
		p := problem(CodeNotFound, fmt.Sprintf("no %s %s in this API; see /openapi.json", r.Method, r.URL.Path), "")
		if rec.Code == http.StatusMethodNotAllowed {
			p = problem(CodeValidationFailed, fmt.Sprintf("%s is not served on %s (allowed: %s)", r.Method, r.URL.Path, rec.Header().Get("Allow")), "", http.StatusMethodNotAllowed)
			w.Header().Set("Allow", rec.Header().Get("Allow"))
		}
		w.Header().Set("Content-Type", p.ContentType(""))
		w.WriteHeader(p.Status)
		_ = json.NewEncoder(w).Encode(p)
	})
}

// describeCustomTypes corrects the OpenAPI schemas of types that encode
// themselves: prices are exact decimal numbers, a task's schema is a JSON
// object or null.
func describeCustomTypes(api huma.API) {
	schemas := api.OpenAPI().Components.Schemas.Map()
	if p := schemas["Price"]; p != nil {
		zero := 0.0
		*p = huma.Schema{Type: "number", Minimum: &zero, Description: "Units per token, an exact decimal"}
	}
	// TaskIO and Message encode flat (docs/contract.md#taskio): the message,
	// the times, and the dynamic keys beside them.
	taskIO := func(kind bool) *huma.Schema {
		props := map[string]*huma.Schema{
			"message":      {Type: "array", Items: &huma.Schema{Ref: "#/components/schemas/ContentPart"}},
			"received_at":  {Type: "string", Description: "When the runtime took delivery (inputs)"},
			"committed_at": {Type: "string", Description: "When the entry entered the conversation"},
		}
		req := []string{"message"}
		if kind {
			props["type"] = &huma.Schema{Type: "string", Enum: []any{"input", "output"}}
			req = append(req, "type")
		}
		return &huma.Schema{Type: "object", Properties: props, Required: req, AdditionalProperties: true,
			Description: "Other keys are the entry's dynamic values (parameters, exposes)"}
	}
	if t := schemas["TaskIO"]; t != nil {
		*t = *taskIO(false)
	}
	if t := schemas["Message"]; t != nil {
		*t = *taskIO(true)
	}
	// huma lists 422 for operations with a body; this API answers 400.
	for _, item := range api.OpenAPI().Paths {
		for _, op := range []*huma.Operation{item.Get, item.Post, item.Put, item.Delete} {
			if op != nil {
				delete(op.Responses, "422")
			}
		}
	}
	// A run's status holds null where nothing failed or waits.
	if st := schemas["Status"]; st != nil {
		for _, f := range []string{"error", "retrying"} {
			if p := st.Properties[f]; p != nil && p.Ref != "" {
				st.Properties[f] = &huma.Schema{AnyOf: []*huma.Schema{{Ref: p.Ref}, {Type: "null"}}}
			}
		}
	}
	for _, name := range []string{"Definition", "Task"} {
		if t := schemas[name]; t != nil && t.Properties["schema"] != nil {
			t.Properties["schema"] = &huma.Schema{Type: "object", Nullable: true,
				Description: "A JSON schema for the answer (seed 003's subset), at most 16,000 bytes; null for none"}
		}
	}
}

// maxBodyBytes bounds every request body: a run's body may be 256 KB
// (docs/tasks-api.md#runs; 1 KB = 1,000 bytes); nothing the API takes is
// larger.
const maxBodyBytes = 256_000

// op declares an operation that needs perm; errors are the statuses it may
// answer with besides those every operation may (400, 401, 403, 429, 500).
func op(id, method, path, perm, summary string, status int, errors ...int) huma.Operation {
	o := huma.Operation{
		OperationID: id, Method: method, Path: path, Summary: summary, DefaultStatus: status,
		Metadata:     map[string]any{"perm": perm},
		Security:     []map[string][]string{{"bearer": {}}},
		Errors:       []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusTooManyRequests},
		MaxBodyBytes: maxBodyBytes,
	}
	o.Errors = append(o.Errors, errors...)
	return o
}

func (s *server) writeJSON(ctx huma.Context, v any) error {
	return json.NewEncoder(ctx.BodyWriter()).Encode(v)
}
