package tasksapi

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"

	"go.temporal.io/sdk/converter"

	"github.com/agenttask/agenttask/internal/codec"
)

// The codec server: Temporal's remote codec protocol at /codec/encode and
// /codec/decode (POST {"payloads": [...]} in proto JSON, answered in the same
// form), so the Web UI and the temporal CLI show decrypted payloads while
// Temporal's database holds none. Served only when AGENT_CODEC_KEYS is set.
const (
	// EnvCodecCORSOrigins lists the origins (scheme://host:port,
	// comma-separated, or *) whose pages may call the codec server: the Web
	// UI's. Default DefaultCodecCORSOrigin.
	EnvCodecCORSOrigins = "AGENT_CODEC_CORS_ORIGINS"
	// DefaultCodecCORSOrigin is the dev stack's Web UI.
	DefaultCodecCORSOrigin = "http://localhost:8233"
	// CodecPath is where the codec server is mounted.
	CodecPath = "/codec"
)

// maxCodecBodyBytes bounds a codec request: a page of history's payloads.
const maxCodecBodyBytes = 64 << 20

// CodecConfig is the codec server's.
type CodecConfig struct {
	Codec *codec.Codec
	// Keys are the API's keys: a request needs one with the view permission.
	Keys Keys
	// Origins may call it from a browser (CORS); "*" allows any.
	Origins []string
	// OpenOnLoopback lets requests from 127.0.0.1 and ::1 in without a key:
	// the dev stack's (agentdev run), whose Web UI sends none.
	OpenOnLoopback bool
}

// ParseOrigins reads AGENT_CODEC_CORS_ORIGINS ("" gives the default).
func ParseOrigins(v string) ([]string, error) {
	if strings.TrimSpace(v) == "" {
		return []string{DefaultCodecCORSOrigin}, nil
	}
	var out []string
	for _, o := range splitList(v) {
		o = strings.TrimSuffix(o, "/")
		if o != "*" && !strings.HasPrefix(o, "http://") && !strings.HasPrefix(o, "https://") || strings.Count(o, "/") > 2 {
			return nil, fmt.Errorf("%s: %q must be an origin such as http://localhost:8233 (scheme, host and port; no path), or *", EnvCodecCORSOrigins, o)
		}
		out = append(out, o)
	}
	return out, nil
}

// NewCodecHandler serves /codec/encode and /codec/decode.
func NewCodecHandler(cfg CodecConfig) http.Handler {
	inner := converter.NewPayloadCodecHTTPHandler(cfg.Codec)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		allowed := cfg.corsHeaders(w, r)
		if r.URL.Path != CodecPath+"/encode" && r.URL.Path != CodecPath+"/decode" {
			codecRefuse(w, problem(CodeNotFound, fmt.Sprintf("no %s in the codec server: POST %s/encode or %s/decode", r.URL.Path, CodecPath, CodecPath), ""))
			return
		}
		switch r.Method {
		case http.MethodOptions: // a browser's preflight
			if !allowed {
				codecRefuse(w, problem(CodeForbidden, fmt.Sprintf("origin %q may not call the codec server; add it to %s", r.Header.Get("Origin"), EnvCodecCORSOrigins), ""))
				return
			}
			w.WriteHeader(http.StatusNoContent)
			return
		case http.MethodPost:
		default:
			w.Header().Set("Allow", "POST, OPTIONS")
			codecRefuse(w, problem(CodeValidationFailed, fmt.Sprintf("%s is not served on %s (allowed: POST, OPTIONS)", r.Method, r.URL.Path), "", http.StatusMethodNotAllowed))
			return
		}
		if !(cfg.OpenOnLoopback && isLoopback(r.RemoteAddr)) {
			key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			perms, known := cfg.Keys[key]
			switch {
			case !ok || key == "":
				codecRefuse(w, problem(CodeUnauthorized, "send a key with the view permission as Authorization: Bearer <key>", ""))
				return
			case !known:
				codecRefuse(w, problem(CodeUnauthorized, "the key is not known", ""))
				return
			case !perms[PermView]:
				codecRefuse(w, problem(CodeForbidden, "the key lacks the view permission this needs", ""))
				return
			}
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxCodecBodyBytes)
		inner.ServeHTTP(w, r)
	})
}

// corsHeaders answers a browser whose Origin is allowed; it reports whether it is.
func (cfg CodecConfig) corsHeaders(w http.ResponseWriter, r *http.Request) bool {
	w.Header().Add("Vary", "Origin")
	origin := r.Header.Get("Origin")
	if origin == "" {
		return false
	}
	ok := false
	for _, o := range cfg.Origins {
		if o == "*" || strings.EqualFold(o, origin) {
			ok = true
			break
		}
	}
	if !ok {
		return false
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Set("Access-Control-Allow-Credentials", "true")
	h.Set("Access-Control-Allow-Methods", "POST, OPTIONS")
	h.Set("Access-Control-Allow-Headers", "Content-Type, Authorization, X-Namespace")
	h.Set("Access-Control-Max-Age", "600")
	return true
}

func isLoopback(remoteAddr string) bool {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func codecRefuse(w http.ResponseWriter, p *Problem) {
	w.Header().Set("Content-Type", p.ContentType(""))
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(p)
}

// withCodec mounts the codec server beside the API when cfg.Codec is set.
func withCodec(api http.Handler, cfg CodecConfig) http.Handler {
	if cfg.Codec == nil {
		return api
	}
	mux := http.NewServeMux()
	mux.Handle(CodecPath+"/", NewCodecHandler(cfg))
	mux.Handle("/", api)
	return mux
}
