package main

import (
	"fmt"
	"net"
	"os"
	"strconv"

	"github.com/agenttask/agenttask/internal/codec"
	"github.com/agenttask/agenttask/internal/devserver"
	"github.com/agenttask/agenttask/internal/tasksapi"
)

// devUIOrigins are the origins of this stack's Web UI, which may call the
// Tasks API's codec server (set by uiCodec, read by devCodec).
var devUIOrigins []string

// uiCodec points the dev stack's Web UI at the Tasks API's codec server
// (AGENT_API_ADDR + /codec) when AGENT_CODEC_KEYS is set, so the UI shows
// decrypted payloads while the database holds only encrypted ones.
func uiCodec(c *codec.Codec, uiPort int) devserver.UICodec {
	if c == nil {
		return devserver.UICodec{}
	}
	addr := envOr(tasksapi.EnvAddr, tasksapi.DefaultAddr)
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "0" {
		fmt.Fprintf(os.Stderr, "The Web UI gets no codec server: %s=%q names no fixed port\n", tasksapi.EnvAddr, addr)
		return devserver.UICodec{}
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	if uiPort > 0 {
		p := strconv.Itoa(uiPort)
		devUIOrigins = []string{"http://localhost:" + p, "http://127.0.0.1:" + p}
	}
	endpoint := "http://" + net.JoinHostPort(host, port) + tasksapi.CodecPath
	fmt.Printf("Payloads:          encrypted with key %q (%s); the Web UI decodes them through %s\n", c.CurrentKeyID(), codec.EnvKeys, endpoint)
	return devserver.UICodec{Endpoint: endpoint}
}

// devCodec opens the codec server to this stack's Web UI: loopback requests
// need no key (the UI sends none), and the UI's origin may call it unless
// AGENT_CODEC_CORS_ORIGINS says otherwise.
func devCodec(cfg *tasksapi.ServeConfig) {
	cfg.CodecOpenOnLoopback = true
	if os.Getenv(tasksapi.EnvCodecCORSOrigins) == "" && len(devUIOrigins) > 0 {
		cfg.CodecOrigins = devUIOrigins
	}
}
