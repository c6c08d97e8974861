package main

import (
	"flag"

	"github.com/agenttask/agenttask/contract"
)

// EnvTranscriptURL is the workers' transcript store, read by messages for
// tasks Temporal no longer has.
const EnvTranscriptURL = "AGENT_TRANSCRIPT_URL"

// messages TASK_ID [--after N] [--limit M] | [--all].
func messagesFlags(fs *flag.FlagSet, o *options) {
	fs.IntVar(&o.after, "after", 0, "entries after this many")
	fs.IntVar(&o.limit, "limit", 0, "at most this many entries; 0: as many as fit a page")
	fs.BoolVar(&o.all, "all", false, "the whole list, page by page")
}

func messages(x *cli, pos []string) (any, error) {
	id, err := oneTaskID("messages", pos)
	if err != nil {
		return nil, err
	}
	paged := x.set["after"] || x.set["limit"]
	if x.opt.all && paged {
		return nil, usagef("messages: --all reads every page; leave out --after and --limit")
	}
	if x.opt.after < 0 || x.opt.limit < 0 {
		return nil, usagef("messages: --after and --limit must not be negative")
	}
	c, err := x.client()
	if err != nil {
		return nil, err
	}
	// A task Temporal no longer has is read from its transcript, when the
	// workers' store is named (and read with their codec keys).
	if u := x.getenv(EnvTranscriptURL); u != "" {
		store, err := c.ReadTranscripts(x.ctx, u, x.getenv)
		if err != nil {
			return nil, usagef("%s: %v", EnvTranscriptURL, err)
		}
		defer func() { _ = store.Close() }()
	}
	switch {
	case x.opt.all:
		return c.AllMessages(x.ctx, id)
	case paged:
		return c.Messages(x.ctx, id, &contract.MessagesPage{After: x.opt.after, Limit: x.opt.limit})
	default:
		return c.Messages(x.ctx, id, nil)
	}
}
