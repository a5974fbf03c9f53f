//go:build !unix

package simstore

// lockDir: Badger's folder lock is unix-only; nothing to take.
func lockDir(string, bool) (func(), error) { return func() {}, nil }
