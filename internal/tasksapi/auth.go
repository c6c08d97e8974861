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
	auth := ctx.Header("Authorization")
	key, ok := strings.CutPrefix(auth, "Bearer ")
	h, perms, known := s.keys.find(key)
	switch {
	case !ok || key == "":
		s.refuse(ctx, problem(CodeUnauthorized, "send the key as Authorization: Bearer <key>", ""))
	case !known:
		s.refuse(ctx, problem(CodeUnauthorized, "the key is not known", ""))
	case !perms[perm]:
		s.refuse(ctx, problem(CodeForbidden, fmt.Sprintf("the key lacks the %s permission this needs", permName(perm)), ""))
	default:
		if p, retry := s.limits.take(h, time.Now()); p != nil {
			ctx.SetHeader("Retry-After", retry)
			s.refuse(ctx, p)
			return
		}
		next(huma.WithValue(ctx, callerKey{}, h.ID()))
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
