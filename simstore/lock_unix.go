//go:build unix

package simstore

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/lcl-project/lcl/internal/bounded"
)

// lockDir takes the lock Badger takes on a store's folder (flock on the
// folder: shared for readers, exclusive for a writer) for as long as lcl
// reads the folder's files itself, so that no writer rewrites a table
// under it (a half-written table would read as damage). It fails at once
// with ErrLocked while a process holds a lock that excludes it.
func lockDir(dir string, exclusive bool) (release func(), err error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("simstore: %w", err)
	}
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	if err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("simstore: %s: %w (another lcl is using it; wait for it or use --store DIR)", bounded.Quote(dir), ErrLocked)
		}
		return nil, fmt.Errorf("simstore: lock %s: %w", bounded.Quote(dir), err)
	}
	return func() { f.Close() }, nil
}
