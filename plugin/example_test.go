package plugin_test

import (
	"fmt"

	"github.com/agenttask/agenttask/plugin"
	"github.com/agenttask/agenttask/worker"
)

// A plugin from a Config written in code: it opens nothing until a worker
// it serves starts. Give it to the worker (worker.Options.Plugins) or to
// the client the worker is made from (client.Options.Plugins).
func ExampleNew() {
	p, err := plugin.New(worker.Config{TaskQueue: "support", TranscriptURL: "mem://"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.Name(), "serves", p.Config().TaskQueue)
	// Output: agenttask serves support
}

// A plugin from the worker's documented environment, here a map in place
// of os.Getenv: the queue it serves, where transcripts go, and the
// defaults of everything unset (retention 30 days).
func ExampleFromEnv() {
	env := map[string]string{
		worker.EnvTaskQueue:     "support",
		worker.EnvTranscriptURL: "mem://",
		"OTEL_SDK_DISABLED":     "true",
	}
	p, err := plugin.FromEnv(func(k string) string { return env[k] })
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg := p.Config()
	fmt.Println(cfg.TaskQueue, cfg.TranscriptURL, cfg.Retention)
	// Output: support mem:// 720h0m0s
}

// A Config needs a transcript store: without one the plugin says which
// setting to give.
func ExampleNew_noTranscriptStore() {
	_, err := plugin.New(worker.Config{TaskQueue: "support"})
	fmt.Println(err != nil)
	// Output: true
}
