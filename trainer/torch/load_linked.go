//go:build cgo && !ltlazy

package torch

// A linked build: libtorch and the shim are loaded with the program.

func loadShim() error { return nil }

// startRuntime applies Init's Runtime at once.
func startRuntime(rt Runtime) error { return initRuntime(rt) }

// applyRuntime has nothing to do: Init applied the Runtime.
func applyRuntime() error { return nil }
