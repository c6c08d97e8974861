package main

import (
	"fmt"
	"log/slog"

	"go.temporal.io/sdk/log"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/connect"
	"github.com/agenttask/agenttask/internal/mount"
	"github.com/agenttask/agenttask/starter"
)

// client dials Temporal once, with the flags over the environment.
func (x *cli) client() (*starter.Client, error) {
	if x.tc == nil {
		env := func(k string) string {
			switch {
			case k == connect.EnvAddress && x.address != "":
				return x.address
			case k == connect.EnvNamespace && x.namespace != "":
				return x.namespace
			}
			return x.getenv(k)
		}
		opts, err := connect.Options(env, quietLogger())
		if err != nil {
			//lint:ignore ST1005 Temporal is a name, and the message is the command's output (API)
			return nil, fmt.Errorf("Temporal connection settings: %w", err)
		}
		tc, err := x.dial(opts)
		if err != nil {
			return nil, &contract.Error{Type: ErrUnavailable, Message: fmt.Sprintf("connecting to Temporal at %s (namespace %q): %v", opts.HostPort, opts.Namespace, err)}
		}
		x.tc = tc
		x.dc = opts.DataConverter // encrypted payloads (AGENT_CODEC_KEYS)
	}
	q := x.taskQueue
	if q == "" {
		q = x.getenv(EnvTaskQueue)
	}
	c := starter.New(x.tc, q).WithDataConverter(x.dc)
	if v := x.getenv(mount.EnvMounts); v != "" {
		mounts, err := mount.ParseMounts(v)
		if err != nil {
			return nil, usagef("%v", err)
		}
		c.CheckMounts(mounts) // the workers' list: a start naming other storage is refused here
	}
	return c, nil
}

// quietLogger keeps the SDK from writing to stdout, which carries the JSON.
func quietLogger() log.Logger {
	return log.NewStructuredLogger(slog.New(slog.DiscardHandler))
}
