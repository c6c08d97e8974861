package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// ErrUnknownServer is a server name the worker does not list in
// AGENT_MCP_SERVERS.
var ErrUnknownServer = errors.New("MCP server not configured on this worker (" + EnvServers + ")")

// OutageError is a server that cannot be reached for now: unreachable,
// connection refused or reset, a timeout, HTTP 429 or 5xx, a broken
// session. It is retryable; the caller waits it out.
type OutageError struct {
	Server string
	Err    error
}

func (e *OutageError) Error() string {
	return fmt.Sprintf("MCP server %q is unavailable (retried until it answers): %v", e.Server, e.Err)
}

func (e *OutageError) Unwrap() error { return e.Err }

// IsOutage reports whether err is (or wraps) an *OutageError.
func IsOutage(err error) bool {
	var o *OutageError
	return errors.As(err, &o)
}

// classify turns an SDK error into an *OutageError or a plain error,
// reading first what the transport saw on the wire (obs), which the SDK's
// errors do not always carry.
func classify(ctx context.Context, server string, err error, obs *observer) error {
	if err == nil {
		return nil
	}
	seen := obs.snapshot()
	switch {
	case seen.oversize:
		return fmt.Errorf("MCP server %q answered with more than %d bytes; a tool result may hold at most %d bytes of data (MaxResultBytes): ask for less, e.g. a smaller page or range", server, maxResponseBytes, MaxResultBytes)
	case errors.Is(ctx.Err(), context.Canceled):
		return fmt.Errorf("MCP server %q: the call was cancelled: %w", server, ctx.Err())
	case seen.authStatus != 0:
		return fmt.Errorf("MCP server %q refused the worker's credentials (HTTP %d); the operator sets them in %sTOKEN or %sHEADERS: %w", server, seen.authStatus, EnvPrefix(server), EnvPrefix(server), ErrCredentials)
	case seen.outageStatus != 0:
		return &OutageError{Server: server, Err: fmt.Errorf("HTTP %d: %w", seen.outageStatus, err)}
	case seen.transportErr != nil:
		return &OutageError{Server: server, Err: seen.transportErr}
	case seen.sessionGone:
		return &OutageError{Server: server, Err: fmt.Errorf("the server forgot the session (HTTP 404): %w", err)}
	}
	if serverRPCError(err) {
		return fmt.Errorf("MCP server %q: %w", server, err)
	}
	if isTransient(err) {
		return &OutageError{Server: server, Err: err}
	}
	return fmt.Errorf("MCP server %q: %w", server, err)
}

// isTransient reports errors a retry can fix: the network, a deadline, a
// session or stream that broke.
func isTransient(err error) bool {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, sdk.ErrConnectionClosed),
		errors.Is(err, sdk.ErrSessionMissing),
		errors.Is(err, io.EOF),
		errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE),
		errors.As(err, &ne):
		return true
	}
	return false
}

// The SDK's own JSON-RPC codes for a transport that failed, not a server
// that answered: "unknown error", "client is closing", "server is
// closing", "rejected by transport".
var sdkTransportCodes = map[int64]bool{-32001: true, -32003: true, -32004: true, -32005: true}

// serverRPCError reports whether err carries a JSON-RPC error the server
// sent (an unknown tool, invalid params): the session is fine and no retry
// changes the answer.
func serverRPCError(err error) bool {
	found := false
	walkErrors(err, func(e error) {
		if w, ok := e.(*jsonrpc.Error); ok && !sdkTransportCodes[w.Code] {
			found = true
		}
	})
	return found
}

// walkErrors calls f on err and everything it wraps, %w trees included.
func walkErrors(err error, f func(error)) {
	if err == nil {
		return
	}
	f(err)
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		walkErrors(u.Unwrap(), f)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			walkErrors(e, f)
		}
	}
}
