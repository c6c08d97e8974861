package tasksapi

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/agenttask/agenttask/internal/definitions"
	"github.com/agenttask/agenttask/internal/taskdef"
)

// PromptVersion is a version as the API shows it.
type PromptVersion struct {
	Name      string   `json:"name,omitempty"`
	Version   int      `json:"version"`
	Variables []string `json:"variables"`
	CreatedAt string   `json:"createdAt"`
	Text      string   `json:"text,omitempty"`
}

// Prompt is a prompt and its versions (without texts).
type Prompt struct {
	Name          string          `json:"name"`
	LatestVersion int             `json:"latestVersion"`
	Versions      []PromptVersion `json:"versions"`
}

type promptName struct {
	Name string `path:"name" pattern:"^[a-z0-9][a-z0-9-]{0,62}$" doc:"1 to 63 lowercase letters, digits and hyphens, starting with a letter or digit"`
}

type newVersionIn struct {
	Name string `path:"name" pattern:"^[a-z0-9][a-z0-9-]{0,62}$" doc:"The prompt's name: 1 to 63 lowercase letters, digits and hyphens, starting with a letter or digit"`
	Body struct {
		Text string `json:"text" doc:"The prompt, at most 100,000 bytes; {{name}} placeholders are its variables"`
	}
}

type versionOut struct {
	Body struct {
		Data PromptVersion `json:"data"`
	}
}

type promptsOut struct {
	Body struct {
		Data []Prompt `json:"data"`
	}
}

type promptOut struct {
	Body struct {
		Data Prompt `json:"data"`
	}
}

func versionOf(v definitions.PromptVersion) PromptVersion {
	return PromptVersion{Name: v.Name, Version: v.Version, Variables: v.Variables, CreatedAt: v.CreatedAt, Text: v.Text}
}

func promptOf(p definitions.PromptInfo) Prompt {
	out := Prompt{Name: p.Name, LatestVersion: p.LatestVersion, Versions: []PromptVersion{}}
	for _, v := range p.Versions {
		v.Name = ""
		out.Versions = append(out.Versions, versionOf(v))
	}
	return out
}

func (s *server) registerPrompts() {
	huma.Register(s.api, op("createPromptVersion", http.MethodPost, "/v1/prompts/{name}/versions", PermDevelop, "Store a new version of a prompt", http.StatusCreated,
		http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType),
		func(ctx context.Context, in *newVersionIn) (*versionOut, error) {
			if fe := taskdef.CheckPromptText(in.Body.Text); fe != nil {
				return nil, invalid(fe.Field, fe.Detail)
			}
			v, err := s.cfg.Store.AddPromptVersion(ctx, in.Name, in.Body.Text, taskdef.PromptVariables(in.Body.Text), caller(ctx))
			if err != nil {
				return nil, fromStore(err)
			}
			out := &versionOut{}
			out.Body.Data = versionOf(v)
			return out, nil
		})
	huma.Register(s.api, op("listPrompts", http.MethodGet, "/v1/prompts", PermView, "List the prompts, by name", http.StatusOK),
		func(ctx context.Context, _ *struct{}) (*promptsOut, error) {
			ps, err := s.cfg.Store.ListPrompts(ctx)
			if err != nil {
				return nil, fromStore(err)
			}
			out := &promptsOut{}
			out.Body.Data = []Prompt{}
			for _, p := range ps {
				out.Body.Data = append(out.Body.Data, promptOf(p))
			}
			return out, nil
		})
	huma.Register(s.api, op("getPrompt", http.MethodGet, "/v1/prompts/{name}", PermView, "Read a prompt and its versions", http.StatusOK, http.StatusNotFound),
		func(ctx context.Context, in *promptName) (*promptOut, error) {
			p, err := s.cfg.Store.GetPrompt(ctx, in.Name)
			if err != nil {
				return nil, fromStore(err)
			}
			out := &promptOut{}
			out.Body.Data = promptOf(p)
			return out, nil
		})
	huma.Register(s.api, op("getPromptVersion", http.MethodGet, "/v1/prompts/{name}/versions/{version}", PermView, "Read one version of a prompt, with its text", http.StatusOK, http.StatusNotFound),
		func(ctx context.Context, in *struct {
			Name    string `path:"name" pattern:"^[a-z0-9][a-z0-9-]{0,62}$"`
			Version int    `path:"version" minimum:"1"`
		}) (*versionOut, error) {
			v, err := s.defs.GetPromptVersion(ctx, in.Name, in.Version)
			if err != nil {
				return nil, fromStore(err)
			}
			out := &versionOut{}
			out.Body.Data = versionOf(v)
			return out, nil
		})
}
