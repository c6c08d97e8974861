// Package devserver runs a complete Temporal server (frontend, history,
// matching and worker services on SQLite) and its Web UI inside the current
// process, assembled like `temporal server start-dev`.
package devserver

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	uiserver "github.com/temporalio/ui-server/v2/server"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/temporal"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// startupTimeout bounds Start when ctx has no deadline, so a server that
// never becomes ready fails instead of hanging.
const startupTimeout = 2 * time.Minute

// Server is a running development server.
type Server struct {
	temporal  temporal.Server
	ui        *uiserver.Server
	frontend  string
	uiURL     string
	namespace string
	logLevel  zap.AtomicLevel

	stopOnce sync.Once
	stopErr  error
}

// Start starts the server and returns once the frontend accepts gRPC calls
// and the namespace and search attributes are ready. ctx bounds startup
// only; the server runs until Stop.
func Start(ctx context.Context, o Options) (*Server, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, startupTimeout)
		defer cancel()
	}

	ports, err := pickServicePorts(o.FrontendIP, o.FrontendPort)
	if err != nil {
		return nil, err
	}
	// Checked now, not when the UI starts, to fail before the slow part.
	uiPort := o.UIPort
	if uiPort != -1 {
		if uiPort, err = portOrFree(o.FrontendIP, uiPort); err != nil {
			return nil, fmt.Errorf("UI: %w", err)
		}
	}
	logLevel, err := zap.ParseAtomicLevel(o.LogLevel)
	if err != nil {
		return nil, fmt.Errorf("log level: %w", err)
	}
	var sql *config.SQL
	if o.Persistence == nil {
		sql, err = prepareSQLite(o.DatabaseFile, clusterName, o.Namespace, o.SearchAttributes)
	} else {
		err = o.Persistence.prepare(clusterName, o.Namespace, o.SearchAttributes)
	}
	if err != nil {
		return nil, err
	}
	cfg := serverConfig(o.FrontendIP, ports, sql)
	o.Persistence.apply(cfg)

	profile, _ := Profile(o.Profile) // checked by withDefaults
	ts, err := temporal.NewServer(
		temporal.WithConfig(cfg),
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithStaticHosts(staticHosts(o.FrontendIP, ports)),
		temporal.WithLogger(serverLogger(o.Logger, logLevel)),
		temporal.WithDynamicConfigClient(dynamicConfig(profile, o.DynamicConfig)),
	)
	if err != nil {
		return nil, fmt.Errorf("create temporal server: %w", err)
	}
	if err := ts.Start(); err != nil {
		return nil, fmt.Errorf("start temporal server: %w", err)
	}
	s := &Server{
		temporal:  ts,
		frontend:  hostPort(o.FrontendIP, ports.frontend),
		namespace: o.Namespace,
		logLevel:  logLevel,
	}
	if err := s.finishStart(ctx, o, uiPort); err != nil {
		return nil, errors.Join(err, s.Stop())
	}
	return s, nil
}

// finishStart waits for the frontend, registers search attributes and
// starts the UI.
func (s *Server) finishStart(ctx context.Context, o Options, uiPort int) error {
	conn, err := grpc.NewClient(s.frontend, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("dial frontend: %w", err)
	}
	defer conn.Close()
	if err := waitFrontend(ctx, conn, s.namespace); err != nil {
		return fmt.Errorf("frontend not ready: %w", err)
	}
	if err := ensureSearchAttributes(ctx, conn, s.namespace, o.SearchAttributes); err != nil {
		return err
	}
	if uiPort == -1 {
		return nil
	}
	if s.ui, err = startUI(ctx, o.FrontendIP, uiPort, s.frontend, s.namespace, o.UICodec); err != nil {
		return err
	}
	s.uiURL = uiURL(o.FrontendIP, uiPort)
	return nil
}

// FrontendHostPort is the gRPC address clients dial, e.g. "127.0.0.1:7233".
func (s *Server) FrontendHostPort() string { return s.frontend }

// UIURL is the Web UI's address, or "" when the UI is disabled.
func (s *Server) UIURL() string { return s.uiURL }

// Namespace is the namespace created at start.
func (s *Server) Namespace() string { return s.namespace }

// Stop shuts down the UI, then the server. It is safe to call more than once.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		// Services going away one by one make the others log connection
		// warnings and "task queue closed" errors for in-flight tasks.
		// They are expected; Stop's own error still reports real failures.
		s.logLevel.SetLevel(zap.DPanicLevel)
		if s.ui != nil {
			s.ui.Stop()
		}
		s.stopErr = s.temporal.Stop()
	})
	return s.stopErr
}
