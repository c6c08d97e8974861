package tasksapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/agenttask/agenttask/internal/codec"
)

// The codec server: Temporal's remote codec protocol at /codec/encode and
// /codec/decode (POST {"payloads": [...]} in proto JSON, answered in the same
// form), so the Web UI and the temporal CLI show decrypted payloads while
// Temporal's database holds none. Served only when AGENT_CODEC_KEYS is set.
//
// Decoding reads any conversation of the namespace in the clear, so it is
// locked down beyond the API's other calls: both routes need a key with
// the decode permission (never implied, not even by a developer key; encode
// too, as ciphertext under the deployment's keys is what workers trust as
// their own); a request naming another namespace (X-Namespace, which the
// Web UI sends) is refused; each call is logged (who, which namespace, how
// many payloads and bytes, never their content); a body is at most 4 MiB;
// and only the configured origins get CORS answers.
const (
	// EnvCodecCORSOrigins lists the origins (scheme://host:port,
	// comma-separated) whose pages may call the codec server: the Web
	// UI's. Default DefaultCodecCORSOrigin. "*" is refused: the codec
	// answers browsers with credentials, which no page of any origin may
	// be given.
	EnvCodecCORSOrigins = "AGENT_CODEC_CORS_ORIGINS"
	// DefaultCodecCORSOrigin is the dev stack's Web UI.
	DefaultCodecCORSOrigin = "http://localhost:8233"
	// CodecPath is where the codec server is mounted.
	CodecPath = "/codec"
	// NamespaceHeader names the namespace whose payloads a request holds
	// (the Web UI and tctl send it).
	NamespaceHeader = "X-Namespace"
)

// MaxCodecBodyBytes bounds a codec request: the Web UI sends the payloads
// of one event or one page of events, well under this.
const MaxCodecBodyBytes = 4 << 20

// CodecConfig is the codec server's.
type CodecConfig struct {
	Codec *codec.Codec
	// Keys are the API's keys: a request needs one with the decode permission.
	Keys Keys
	// Namespace is the API's (TEMPORAL_NAMESPACE): a request whose
	// X-Namespace names another is refused. Empty: "default".
	Namespace string
	// Origins may call it from a browser (CORS).
	Origins []string
	// OpenOnLoopback lets requests from 127.0.0.1 and ::1 in without a key:
	// the dev stack's (agentdev run), whose Web UI sends none.
	OpenOnLoopback bool
	// RateLimit is each key's calls a minute, counted apart from the API's
	// (AGENT_API_RATE_LIMIT); 0: no limit.
	RateLimit int
	// Log gets a line per codec call (nil: slog's default logger).
	Log log.Logger
}

// ParseOrigins reads AGENT_CODEC_CORS_ORIGINS ("" gives the default).
func ParseOrigins(v string) ([]string, error) {
	if strings.TrimSpace(v) == "" {
		return []string{DefaultCodecCORSOrigin}, nil
	}
	var out []string
	for _, o := range splitList(v) {
		o = strings.TrimSuffix(o, "/")
		if o == "*" {
			return nil, fmt.Errorf("%s: * is not allowed: the codec server answers with credentials, so it names each origin it trusts; list the Web UI's origin, such as %s", EnvCodecCORSOrigins, DefaultCodecCORSOrigin)
		}
		if !strings.HasPrefix(o, "http://") && !strings.HasPrefix(o, "https://") || strings.Count(o, "/") > 2 {
			return nil, fmt.Errorf("%s: %q must be an origin such as http://localhost:8233 (scheme, host and port; no path)", EnvCodecCORSOrigins, o)
		}
		out = append(out, o)
	}
	return out, nil
}

// NewCodecHandler serves /codec/encode and /codec/decode.
func NewCodecHandler(cfg CodecConfig) http.Handler {
	inner := converter.NewPayloadCodecHTTPHandler(cfg.Codec)
	if cfg.Namespace == "" {
		cfg.Namespace = "default"
	}
	if cfg.Log == nil {
		cfg.Log = log.NewStructuredLogger(slog.Default())
	}
	limits := newRateLimits(cfg.Keys, cfg.RateLimit)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		allowed := cfg.corsHeaders(w, r)
		op := strings.TrimPrefix(r.URL.Path, CodecPath+"/")
		if op != "encode" && op != "decode" {
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
		who := "loopback" // the dev stack's keyless Web UI
		if !(cfg.OpenOnLoopback && isLoopback(r.RemoteAddr)) {
			key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			h, perms, known := cfg.Keys.find(key)
			switch {
			case !ok || key == "":
				codecRefuse(w, problem(CodeUnauthorized, "send a key with the decode permission as Authorization: Bearer <key>", ""))
				return
			case !known:
				codecRefuse(w, problem(CodeUnauthorized, "the key is not known", ""))
				return
			case !perms[PermDecode]:
				cfg.Log.Warn("codec call refused: the key lacks decode", "op", op, "key_id", h.ID(), "namespace", r.Header.Get(NamespaceHeader), "remote", r.RemoteAddr)
				codecRefuse(w, problem(CodeForbidden, fmt.Sprintf("the key lacks the decode permission the codec server needs (API_KEYS key=...+%s)", PermDecode), ""))
				return
			}
			if p, retry := limits.take(h, time.Now()); p != nil {
				w.Header().Set("Retry-After", retry)
				codecRefuse(w, p)
				return
			}
			who = h.ID()
		}
		ns := r.Header.Get(NamespaceHeader)
		if ns != "" && ns != cfg.Namespace {
			cfg.Log.Warn("codec call refused: another namespace", "op", op, "key_id", who, "namespace", ns, "remote", r.RemoteAddr)
			codecRefuse(w, problem(CodeForbidden, fmt.Sprintf("%s %q is not this codec server's namespace %q: point that namespace's Web UI at its own codec server", NamespaceHeader, ns, cfg.Namespace), ""))
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxCodecBodyBytes))
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &tooLarge):
			codecRefuse(w, problem(CodeValidationFailed, fmt.Sprintf("the body is over %d bytes (4 MiB); send fewer payloads per call", MaxCodecBodyBytes), "", http.StatusRequestEntityTooLarge))
			return
		case err != nil:
			codecRefuse(w, problem(CodeValidationFailed, "reading the body: "+err.Error(), ""))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := &countingWriter{ResponseWriter: w, status: http.StatusOK}
		inner.ServeHTTP(rec, r)
		// Who decoded what: counts and sizes only. The Web UI names no
		// workflow in its codec calls (only X-Namespace), so none is logged.
		cfg.Log.Info("codec call", "op", op, "key_id", who, "namespace", ns, "origin", r.Header.Get("Origin"), "remote", r.RemoteAddr,
			"status", rec.status, "payloads", payloadCount(body), "bytes_in", len(body), "bytes_out", rec.bytes)
	})
}

// payloadCount counts the payloads of a codec body (0 if it is not one).
func payloadCount(body []byte) int {
	var p commonpb.Payloads
	if protojson.Unmarshal(body, &p) != nil {
		return 0
	}
	return len(p.Payloads)
}

// countingWriter records an answer's status and size for the log.
type countingWriter struct {
	http.ResponseWriter
	status int
	bytes  int
}

func (c *countingWriter) WriteHeader(status int) {
	c.status = status
	c.ResponseWriter.WriteHeader(status)
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.ResponseWriter.Write(b)
	c.bytes += n
	return n, err
}

// corsHeaders answers a browser whose Origin is one of the configured ones
// (never any other: the answer allows credentials); it reports whether it is.
func (cfg CodecConfig) corsHeaders(w http.ResponseWriter, r *http.Request) bool {
	w.Header().Add("Vary", "Origin")
	origin := r.Header.Get("Origin")
	if origin == "" {
		return false
	}
	ok := false
	for _, o := range cfg.Origins {
		if o != "*" && strings.EqualFold(o, origin) {
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
	h.Set("Access-Control-Allow-Headers", "Content-Type, Authorization, Authorization-Extras, X-Namespace")
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
