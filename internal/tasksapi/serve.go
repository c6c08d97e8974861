package tasksapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/a2a"
	"github.com/agenttask/agenttask/internal/a2apush"
	"github.com/agenttask/agenttask/internal/broker"
	"github.com/agenttask/agenttask/internal/catalog"
	"github.com/agenttask/agenttask/internal/codec"
	"github.com/agenttask/agenttask/internal/connect"
	"github.com/agenttask/agenttask/internal/definitions"
	"github.com/agenttask/agenttask/internal/mcp"
	"github.com/agenttask/agenttask/internal/transcript"
)

// Environment of the api binary (besides API_KEYS, DEVELOPER_KEYS and
// Temporal's connection variables).
const (
	EnvAddr        = "AGENT_API_ADDR"         // listen address, default :8080
	EnvTaskQueue   = "AGENT_API_TASK_QUEUE"   // the store's workflows, default agent-tasks-api
	EnvRunTimeout  = "AGENT_API_RUN_TIMEOUT"  // how long a run request waits, default 5m
	EnvProcessedIn = "AGENT_API_PROCESSED_IN" // X-Ai-Processed-In: an ISO 3166-1 alpha-2 code
	EnvRunQueue    = "AGENT_TASK_QUEUE"       // where runs (AgentTask) go: the workers' queue
	// EnvStorePrefix starts the IDs of the store's workflows (default
	// agenttask-api/): APIs with different prefixes keep separate projects
	// in one namespace.
	EnvStorePrefix = "AGENT_API_STORE_PREFIX"
)

var storePrefixRE = regexp.MustCompile(`^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*/$`)

// Defaults of the api binary.
const (
	DefaultAddr      = ":8080"
	DefaultTaskQueue = "agent-tasks-api"
)

// Defaults of a run.
const (
	DefaultRunTimeout = 5 * time.Minute
	// DefaultProcessedIn is ZZ, the code ISO 3166 leaves to users: set
	// AGENT_API_PROCESSED_IN to the country the workers run in.
	DefaultProcessedIn = "ZZ"
)

var countryRE = regexp.MustCompile(`^[A-Z]{2}$`)

// ServeConfig is how the api process runs.
type ServeConfig struct {
	Addr        string
	Queue       string
	Keys        Keys
	Catalog     *catalog.Catalog
	RunQueue    string
	RunTimeout  time.Duration
	ProcessedIn string
	// StorePrefix starts the store's workflow IDs (AGENT_API_STORE_PREFIX).
	StorePrefix string
	// BrokerURL is the NATS server runs stream through (AGENT_NATS_URL);
	// "" refuses "stream": true. The broker is optional at run time: Serve
	// starts without it and connects in the background (broker.Start);
	// meanwhile "stream": true is refused with 503 streaming_unavailable.
	BrokerURL string
	// Broker, when set, is used in place of one Serve starts for
	// BrokerURL; its owner closes it (cmd/api, which logs it going on and
	// off).
	Broker *broker.Broker
	// Ready, when set, gets the address the API listens on.
	Ready func(addr string)
	// TranscriptURL is the workers' transcript store (AGENT_TRANSCRIPT_URL,
	// read with Codec's keys when set): messages of a run Temporal has
	// removed are read from it (messages_transcript.go). "": not served.
	TranscriptURL string
	// Codec, when set (AGENT_CODEC_KEYS), is served at /codec/encode and
	// /codec/decode (codec.go) to pages of CodecOrigins
	// (AGENT_CODEC_CORS_ORIGINS); CodecOpenOnLoopback (the dev stack) lets
	// loopback requests in without a key.
	Codec               *codec.Codec
	CodecOrigins        []string
	CodecOpenOnLoopback bool
	// Namespace is the client's (TEMPORAL_NAMESPACE, default "default"):
	// the codec server decodes for it only.
	Namespace string
	// RateLimit is each key's calls a minute (AGENT_API_RATE_LIMIT, default
	// DefaultRateLimit; 0: no limit), on the API and on the codec server apart.
	RateLimit int
	// Log gets the codec server's audit lines (nil: slog's default logger).
	Log log.Logger
	// MCPServers are the names of the MCP servers the workers list, when the
	// API is given the same AGENT_MCP_SERVERS: a task's mcp capability must
	// name one. nil: not known here, a run names what the worker refuses.
	MCPServers []string
	// A2AAgents, likewise, are the remote agents the workers list
	// (AGENT_A2A_AGENTS): a task's a2a capability must name one.
	A2AAgents []string
	// PushOptions are the A2A push notifications' (AGENT_A2A_PUSH_*).
	PushOptions a2apush.Options
}

// ConfigFromEnv reads the api's environment. Without keys it refuses: an
// API nobody can call is a misconfiguration.
func ConfigFromEnv(getenv func(string) string) (ServeConfig, error) {
	c := ServeConfig{Addr: DefaultAddr, Queue: DefaultTaskQueue, RunQueue: contract.DefaultTaskQueue, RunTimeout: DefaultRunTimeout, ProcessedIn: DefaultProcessedIn}
	if v := getenv(EnvRunQueue); v != "" {
		c.RunQueue = v
	}
	if v := getenv(EnvRunTimeout); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second {
			return c, fmt.Errorf("%s: %q must be a duration of at least 1s, such as 5m", EnvRunTimeout, v)
		}
		c.RunTimeout = d
	}
	if v := getenv(EnvProcessedIn); v != "" {
		if !countryRE.MatchString(v) {
			return c, fmt.Errorf("%s: %q must be an ISO 3166-1 alpha-2 code, such as KE", EnvProcessedIn, v)
		}
		c.ProcessedIn = v
	}
	if v := getenv(EnvAddr); v != "" {
		c.Addr = v
	}
	if v := getenv(EnvTaskQueue); v != "" {
		c.Queue = v
	}
	keys, err := ParseKeys(getenv(EnvAPIKeys), getenv(EnvDeveloperKeys))
	if err != nil {
		return c, err
	}
	if len(keys) == 0 {
		return c, fmt.Errorf("no keys: set %s (key=call+view,...) and/or %s (key,...)", EnvAPIKeys, EnvDeveloperKeys)
	}
	c.Keys = keys
	if c.RateLimit, err = parseRateLimit(getenv(EnvRateLimit)); err != nil {
		return c, err
	}
	c.Namespace = getenv(connect.EnvNamespace)
	if c.Namespace == "" {
		c.Namespace = connect.DefaultNamespace
	}
	c.BrokerURL = getenv(broker.EnvURL)
	c.TranscriptURL = getenv(EnvTranscriptURL)
	c.StorePrefix = definitions.DefaultPrefix
	if v := getenv(EnvStorePrefix); v != "" {
		if !storePrefixRE.MatchString(v) {
			return c, fmt.Errorf("%s: %q must be names of letters, digits, '.', '_' and '-', each followed by '/', such as team-a/", EnvStorePrefix, v)
		}
		c.StorePrefix = v
	}
	if c.Catalog, err = catalog.FromEnv(getenv); err != nil {
		return c, err
	}
	if getenv(mcp.EnvServers) != "" {
		servers, err := mcp.ServersFromEnv(getenv)
		if err != nil {
			return c, err
		}
		c.MCPServers = servers.Names()
	}
	if c.PushOptions, err = a2apush.OptionsFromEnv(getenv); err != nil {
		return c, err
	}
	if getenv(a2a.EnvAgents) != "" {
		agents, err := a2a.AgentsFromEnv(getenv)
		if err != nil {
			return c, err
		}
		c.A2AAgents = agents.Names()
	}
	if c.Codec, err = codec.FromGetenv(getenv); err != nil {
		return c, err
	}
	if c.CodecOrigins, err = ParseOrigins(getenv(EnvCodecCORSOrigins)); err != nil {
		return c, err
	}
	return c, nil
}

// Serve runs the store's worker and the HTTP API until ctx is done.
func Serve(ctx context.Context, c client.Client, cfg ServeConfig) error {
	w := sdkworker.New(c, cfg.Queue, sdkworker.Options{})
	definitions.Register(w)
	events := cfg.Broker
	if events == nil && cfg.BrokerURL != "" {
		var err error
		if events, err = broker.Start(cfg.BrokerURL, "agenttask-api", nil); err != nil {
			return fmt.Errorf("the broker %s (%s): %w", broker.Redact(cfg.BrokerURL), broker.EnvURL, err)
		}
		defer events.Close()
	}
	if events != nil && cfg.Codec != nil {
		events.SetCodec(cfg.Codec) // streamed text encrypted in the broker too
	}
	if cfg.StorePrefix == "" {
		cfg.StorePrefix = definitions.DefaultPrefix
	}
	var transcripts *transcript.Store // only read (messages after Temporal's retention)
	if cfg.TranscriptURL != "" {
		var err error
		if transcripts, err = transcript.OpenWith(ctx, cfg.TranscriptURL, cfg.Codec.WrapBucket); err != nil {
			return fmt.Errorf("the transcript store %s (%s): %w", cfg.TranscriptURL, EnvTranscriptURL, err)
		}
		defer func() { _ = transcripts.Close() }()
	}
	h, _ := New(Config{Store: &definitions.Store{C: c, Queue: cfg.Queue, Prefix: cfg.StorePrefix}, Keys: cfg.Keys, Catalog: cfg.Catalog,
		TaskQueue: cfg.RunQueue, RunTimeout: cfg.RunTimeout, ProcessedIn: cfg.ProcessedIn, Broker: events, Transcript: transcripts, RateLimit: cfg.RateLimit, Codec: cfg.Codec,
		MCPServers: cfg.MCPServers, A2AAgents: cfg.A2AAgents, PushWorker: w, PushOptions: cfg.PushOptions})
	if err := w.Start(); err != nil { // after New: it registers the push notifications' workflow
		return fmt.Errorf("starting the store's worker on %q: %w", cfg.Queue, err)
	}
	defer w.Stop()
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", cfg.Addr, err)
	}
	h = withCodec(h, CodecConfig{Codec: cfg.Codec, Keys: cfg.Keys, Namespace: cfg.Namespace, Origins: cfg.CodecOrigins,
		OpenOnLoopback: cfg.CodecOpenOnLoopback, RateLimit: cfg.RateLimit, Log: cfg.Log})
	srv := httpServer(h, 1) // header, read and idle timeouts; none on writing (streams)
	if cfg.Ready != nil {
		cfg.Ready(ln.Addr().String())
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return srv.Shutdown(sctx)
	case err := <-done:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	}
}
