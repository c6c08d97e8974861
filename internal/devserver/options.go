package devserver

import (
	"fmt"
	"net"

	enumspb "go.temporal.io/api/enums/v1"
	"go.uber.org/zap"
)

// Ports used by `agentdev server` when no flag overrides them; the same
// defaults as `temporal server start-dev`.
const (
	DefaultFrontendPort = 7233
	DefaultUIPort       = 8233
)

// Options configures the embedded development server. The zero value is
// meant for tests: in-memory SQLite, frontend and UI on free ports.
type Options struct {
	// DatabaseFile is the SQLite file. "" means an in-memory database that
	// disappears with the process.
	DatabaseFile string
	// Persistence, when set, is the database instead of SQLite (DatabaseFile
	// is then ignored): PostgreSQL, its schema set up by the caller.
	Persistence *Persistence
	// FrontendIP is the address every service binds to. Default "127.0.0.1".
	FrontendIP string
	// FrontendPort is the gRPC port clients dial. 0 picks a free port.
	FrontendPort int
	// UIPort is the Web UI port. 0 picks a free port, -1 disables the UI.
	UIPort int
	// UICodec, when its Endpoint is set, is the codec server the Web UI
	// decodes payloads with.
	UICodec UICodec
	// Namespace is created at start if missing. Default "default".
	Namespace string
	// SearchAttributes are registered on Namespace at start. Attributes that
	// already exist with the same type are left alone.
	SearchAttributes map[string]enumspb.IndexedValueType
	// Logger receives the server's logs. nil discards them.
	Logger *zap.Logger
	// LogLevel is the lowest level passed to Logger: "debug", "info",
	// "warn" or "error". Default "warn" because the server is chatty.
	LogLevel string
	// Profile names the dynamic-config profile (profile.go). Default
	// ProfileThroughput.
	Profile string
	// DynamicConfig sets more dynamic-config keys, over the profile's.
	DynamicConfig map[string]any
}

func (o Options) withDefaults() (Options, error) {
	if o.FrontendIP == "" {
		o.FrontendIP = "127.0.0.1"
	}
	if o.FrontendIP == "localhost" {
		// The server's static membership needs an IP, not a name.
		o.FrontendIP = "127.0.0.1"
	}
	if net.ParseIP(o.FrontendIP) == nil {
		return o, fmt.Errorf("frontend IP %q is not an IP address", o.FrontendIP)
	}
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	if o.Profile == "" {
		o.Profile = ProfileThroughput
	}
	if _, err := Profile(o.Profile); err != nil {
		return o, err
	}
	if o.LogLevel == "" {
		o.LogLevel = "warn"
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.FrontendPort < 0 || o.FrontendPort > 65535 {
		return o, fmt.Errorf("frontend port %d out of range", o.FrontendPort)
	}
	if o.UIPort < -1 || o.UIPort > 65535 {
		return o, fmt.Errorf("UI port %d out of range", o.UIPort)
	}
	return o, nil
}
