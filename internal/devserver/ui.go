package devserver

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uiserveroptions "github.com/temporalio/ui-server/v2/server/server_options"
)

// startUI serves the Web UI (assets embedded in the ui-server module) on
// ip:port, proxying its API to the frontend, and returns once it answers.
//
// ui-server's Start blocks and exits the process if it cannot listen, so the
// port is checked just before; a steal in between is the remaining risk.
func startUI(ctx context.Context, ip string, port int, frontend, namespace string, codec ...UICodec) (*uiserver.Server, error) {
	if _, err := portOrFree(ip, port); err != nil {
		return nil, fmt.Errorf("UI: %w", err)
	}
	cfg := &uiconfig.Config{
		Host:                uiHost(ip),
		Port:                port,
		TemporalGRPCAddress: frontend,
		EnableUI:            true,
		DefaultNamespace:    namespace,
		// Plain HTTP on localhost: the CSRF cookie must not require TLS.
		CORS:     uiconfig.CORS{CookieInsecure: true},
		HideLogs: true,
	}
	for _, c := range codec {
		if c.Endpoint != "" {
			cfg.Codec = uiconfig.Codec{Endpoint: c.Endpoint, PassAccessToken: c.PassAccessToken, IncludeCredentials: c.IncludeCredentials}
		}
	}
	ui := uiserver.NewServer(uiserveroptions.WithConfigProvider(cfg))
	go func() { _ = ui.Start() }()

	if err := waitHTTP(ctx, "http://"+hostPort(ip, port)+"/healthz"); err != nil {
		ui.Stop()
		return nil, fmt.Errorf("UI did not come up: %w", err)
	}
	return ui, nil
}

// UICodec is the Web UI's codec server (ui-server's codec settings): the UI
// sends payloads to Endpoint+"/decode" from the browser, with its own access
// token when PassAccessToken is set, with cookies when IncludeCredentials is.
type UICodec struct {
	Endpoint           string
	PassAccessToken    bool
	IncludeCredentials bool
}

func waitHTTP(ctx context.Context, url string) error {
	client := &http.Client{Timeout: time.Second}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// uiHost brackets an IPv6 address: ui-server joins host and port itself.
func uiHost(ip string) string {
	if addr := net.ParseIP(ip); addr != nil && addr.To4() == nil {
		return "[" + ip + "]"
	}
	return ip
}

// uiURL is the address to open in a browser.
func uiURL(ip string, port int) string {
	// "localhost" may resolve to either loopback address, so it is only
	// safe when the UI listens on 127.0.0.1 or on every address.
	if ip == "127.0.0.1" || net.ParseIP(ip).IsUnspecified() {
		return "http://localhost:" + strconv.Itoa(port)
	}
	return "http://" + hostPort(ip, port)
}
