package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/agenttask/agenttask/internal/broker/embedded"
	"github.com/agenttask/agenttask/internal/devserver"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// runServer runs the embedded Temporal server and UI, and the embedded
// broker (NATS JetStream), until ctx is cancelled. Once ready it prints one
// line to stdout, which tests wait for:
//
//	READY <frontend host:port> <ui url or -> <broker url or ->
func runServer(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("agentdev server", flag.ContinueOnError)
	db := fs.String("db", "", "the database: a SQLite `file`, or a PostgreSQL URL postgres://USER:PASSWORD@HOST:PORT/DBNAME (schema set up or updated at start); empty keeps everything in memory")
	ip := fs.String("ip", "127.0.0.1", "IP address the server and UI bind to")
	port := fs.Int("port", devserver.DefaultFrontendPort, "frontend gRPC port; 0 picks a free port")
	uiPort := fs.Int("ui-port", devserver.DefaultUIPort, "Web UI port; 0 picks a free port, -1 disables the UI")
	namespace := fs.String("namespace", "default", "namespace to create")
	logLevel := fs.String("log-level", "warn", "server log level: debug, info, warn or error")
	natsPort := fs.Int("nats-port", DefaultNATSPort, "the embedded broker's port; 0 picks a free port, -1 runs no broker")
	codecEndpoint := fs.String("codec-endpoint", "", "a codec server `URL` the Web UI decodes payloads with (such as the api's http://localhost:8080/codec)")
	natsDir := fs.String("nats-dir", "", "the broker's storage `folder`; empty: a temporary one")
	dc := dynamicConfigFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("server: unexpected arguments %q", fs.Args())
	}

	logger, err := stderrLogger(*logLevel)
	if err != nil {
		return err
	}
	defer func() { _ = logger.Sync() }()

	dbFile, persistence, err := database(*db, logger)
	if err != nil {
		return err
	}
	s, err := devserver.Start(ctx, devserver.Options{
		DatabaseFile:     dbFile,
		Persistence:      persistence,
		FrontendIP:       *ip,
		FrontendPort:     *port,
		UIPort:           *uiPort,
		UICodec:          devserver.UICodec{Endpoint: *codecEndpoint},
		Namespace:        *namespace,
		SearchAttributes: devserver.SearchAttributes,
		Logger:           logger,
		LogLevel:         *logLevel,
		Profile:          *dc.profile,
		DynamicConfig:    dc.values,
	})
	if err != nil {
		return err
	}
	ui := s.UIURL()
	if ui == "" {
		ui = "-"
	}
	nats := "-"
	if *natsPort >= 0 {
		b, err := embedded.Start(embedded.Options{Dir: *natsDir, Host: *ip, Port: *natsPort})
		if err != nil {
			_ = s.Stop()
			return fmt.Errorf("the embedded broker: %w", err)
		}
		defer b.Shutdown()
		nats = b.URL()
	}
	fmt.Printf("READY %s %s %s\n", s.FrontendHostPort(), ui, nats)

	<-ctx.Done()
	return s.Stop()
}

// database reads --db: a SQLite file, or a PostgreSQL URL whose databases
// are created and brought to the latest schema first.
func database(db string, logger *zap.Logger) (string, *devserver.Persistence, error) {
	if !isPostgresURL(db) {
		return db, nil, nil
	}
	p, err := parsePostgresURL(db)
	if err != nil {
		return "", nil, err
	}
	if err := setupPostgres(p, logger); err != nil {
		return "", nil, err
	}
	return "", p, nil
}

// DefaultNATSPort is NATS's own default port.
const DefaultNATSPort = 4222

// stderrLogger keeps stdout free for the READY line.
func stderrLogger(level string) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("log level: %w", err)
	}
	cfg := zap.NewProductionConfig()
	cfg.Level = zap.NewAtomicLevelAt(lvl)
	cfg.Encoding = "console"
	cfg.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
	cfg.DisableStacktrace = true
	return cfg.Build()
}
