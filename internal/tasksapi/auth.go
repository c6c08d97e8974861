package tasksapi

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"strings"

	"github.com/danielgtaylor/huma/v2"
)

// Permissions (seed 004): call runs tasks and sends inputs to and cancels
// runs; view reads tasks, prompts, models and runs; develop (developer keys
// only) creates, changes and deletes tasks and prompts. A developer key can
// do everything; an API key never develops.
const (
	PermCall    = "call"
	PermView    = "view"
	PermDevelop = "develop"
)

// Environment variables of the keys.
const (
	EnvAPIKeys       = "API_KEYS"       // key=perm+perm,key=perm (perms call, view)
	EnvDeveloperKeys = "DEVELOPER_KEYS" // key,key
)

// Keys maps each key to its permissions.
type Keys map[string]map[string]bool

// ParseKeys reads API_KEYS and DEVELOPER_KEYS.
func ParseKeys(apiKeys, developerKeys string) (Keys, error) {
	k := Keys{}
	for _, item := range splitList(apiKeys) {
		key, perms, ok := strings.Cut(item, "=")
		if !ok || key == "" || perms == "" {
			return nil, fmt.Errorf("%s: %q must be key=perm+perm (perms call, view)", EnvAPIKeys, redactKey(item))
		}
		if _, dup := k[key]; dup {
			return nil, fmt.Errorf("%s: a key is listed twice", EnvAPIKeys)
		}
		k[key] = map[string]bool{}
		for _, p := range strings.Split(perms, "+") {
			if p != PermCall && p != PermView {
				return nil, fmt.Errorf("%s: permission %q of key %s is not call or view", EnvAPIKeys, p, KeyID(key))
			}
			k[key][p] = true
		}
	}
	for _, key := range splitList(developerKeys) {
		if _, dup := k[key]; dup {
			return nil, fmt.Errorf("%s: key %s is also an API key", EnvDeveloperKeys, KeyID(key))
		}
		k[key] = map[string]bool{PermCall: true, PermView: true, PermDevelop: true}
	}
	return k, nil
}

func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

func redactKey(item string) string {
	if key, perms, ok := strings.Cut(item, "="); ok {
		return KeyID(key) + "=" + perms
	}
	return KeyID(item)
}

// KeyID names a key without revealing it: 26 lowercase base32 characters
// of its SHA-256 (what createdBy and updatedBy show).
func KeyID(key string) string {
	sum := sha256.Sum256([]byte(key))
	return strings.ToLower(base32.StdEncoding.EncodeToString(sum[:]))[:26]
}

type callerKey struct{}

// caller is the ID of the key that made the request.
func caller(ctx context.Context) string {
	id, _ := ctx.Value(callerKey{}).(string)
	return id
}

// authorize refuses a request without a known key (401) or without the
// operation's permission (403), before its body is read.
func (s *server) authorize(ctx huma.Context, next func(huma.Context)) {
	perm, _ := ctx.Operation().Metadata["perm"].(string)
	if perm == "" {
		next(ctx) // the OpenAPI description
		return
	}
	auth := ctx.Header("Authorization")
	key, ok := strings.CutPrefix(auth, "Bearer ")
	perms, known := s.keys[key]
	switch {
	case !ok || key == "":
		s.refuse(ctx, problem(CodeUnauthorized, "send the key as Authorization: Bearer <key>", ""))
	case !known:
		s.refuse(ctx, problem(CodeUnauthorized, "the key is not known", ""))
	case !perms[perm]:
		s.refuse(ctx, problem(CodeForbidden, fmt.Sprintf("the key lacks the %s permission this needs", permName(perm)), ""))
	default:
		next(huma.WithValue(ctx, callerKey{}, KeyID(key)))
	}
}

func permName(p string) string {
	if p == PermDevelop {
		return "developer"
	}
	return p
}

func (s *server) refuse(ctx huma.Context, p *Problem) {
	ctx.SetHeader("Content-Type", p.ContentType(""))
	ctx.SetStatus(p.Status)
	_ = s.writeJSON(ctx, p)
}
