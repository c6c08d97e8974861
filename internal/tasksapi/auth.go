package tasksapi

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
)

// Keys, their hashes and permissions: keys.go; their rate limits: ratelimit.go.

type callerKey struct{}

// caller is the ID of the key that made the request.
func caller(ctx context.Context) string {
	id, _ := ctx.Value(callerKey{}).(string)
	return id
}

// authorize refuses a request without a known key (401), without the
// operation's permission (403) or over its key's rate limit (429), before
// its body is read.
func (s *server) authorize(ctx huma.Context, next func(huma.Context)) {
	perm, _ := ctx.Operation().Metadata["perm"].(string)
	if perm == "" {
		next(ctx) // the OpenAPI description
		return
	}
	id, p, retry := s.admitKey(ctx.Header("Authorization"), perm)
	if p != nil {
		if retry != "" {
			ctx.SetHeader("Retry-After", retry)
		}
		s.refuse(ctx, p)
		return
	}
	next(huma.WithValue(ctx, callerKey{}, id))
}

// admitKey checks an Authorization header: a known key (401), holding one
// of perms (403), within its rate limit (429, with the Retry-After value).
// It returns the key's ID when admitted.
func (s *server) admitKey(auth string, perms ...string) (string, *Problem, string) {
	key, ok := strings.CutPrefix(auth, "Bearer ")
	h, held, known := s.keys.find(key)
	switch {
	case !ok || key == "":
		return "", problem(CodeUnauthorized, "send the key as Authorization: Bearer <key>", ""), ""
	case !known:
		return "", problem(CodeUnauthorized, "the key is not known", ""), ""
	}
	allowed := false
	for _, p := range perms {
		allowed = allowed || held[p]
	}
	if !allowed {
		return "", problem(CodeForbidden, fmt.Sprintf("the key lacks the %s permission this needs", permName(perms[0])), ""), ""
	}
	if p, retry := s.limits.take(h, time.Now()); p != nil {
		return "", p, retry
	}
	return h.ID(), nil, ""
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
