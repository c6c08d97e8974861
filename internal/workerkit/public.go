package workerkit

import "fmt"

// fromPublic is package worker's conversion of its Config into this
// package's, a func(worker.Config) Config: this package cannot name
// worker.Config (worker imports it), and package plugin, which makes its
// plugin from a worker.Config, cannot reach that Config's unexported
// fields. Package worker registers it when it is initialized, which is
// before any package importing worker runs.
var fromPublic any

// SetPublic registers package worker's conversion of its Config.
func SetPublic[C any](f func(C) Config) { fromPublic = f }

// FromPublic converts c, a worker.Config, with the conversion package
// worker registered.
func FromPublic[C any](c C) Config {
	f, ok := fromPublic.(func(C) Config)
	if !ok {
		panic(fmt.Sprintf("workerkit: no conversion of %T registered (package worker registers its Config's)", c))
	}
	return f(c)
}
