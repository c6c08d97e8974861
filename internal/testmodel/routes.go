package testmodel

import (
	"net/http"
	"strings"
)

// The protocols the server speaks, as Call.Protocol names them.
const (
	ProtocolOpenAI    = "openai"
	ProtocolAnthropic = "anthropic"
	ProtocolGemini    = "google"
)

// protocol is one wire protocol: how a request is read and each kind of
// answer written. Everything between (recording, holding, the script) is
// shared, so one script answers on every protocol.
type protocol struct {
	name               string
	parse              func(raw []byte, r *http.Request) (Call, error)
	writeError         func(w http.ResponseWriter, status int, msg string)
	writeContextLength func(w http.ResponseWriter, limit, tokens int)
	writeReply         func(w http.ResponseWriter, c Call, r Reply)
	writeStream        func(s *Server, w http.ResponseWriter, r *http.Request, c Call, rep Reply)
}

var openaiProtocol = protocol{
	name: ProtocolOpenAI,
	parse: func(raw []byte, _ *http.Request) (Call, error) {
		c, err := parseCall(raw)
		c.cache = implicitKey(c.Messages)
		return c, err
	},
	writeError:         writeError,
	writeContextLength: writeContextLength,
	writeReply:         writeReply,
	writeStream:        (*Server).writeStream,
}

// route picks the protocol of a request by its path.
func route(r *http.Request) (protocol, bool) {
	if r.Method != http.MethodPost {
		return protocol{}, false
	}
	switch p := r.URL.Path; {
	case p == "/v1/chat/completions":
		return openaiProtocol, true
	case p == "/v1/messages":
		return anthropicProtocol, true
	case strings.HasPrefix(p, "/v1beta/models/") &&
		(strings.HasSuffix(p, ":generateContent") || strings.HasSuffix(p, ":streamGenerateContent")):
		return geminiProtocol, true
	}
	return protocol{}, false
}
