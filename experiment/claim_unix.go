//go:build unix

package experiment

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// tryClaim takes the run directory dir's claim: an exclusive flock on
// dir/ClaimFile, held while the returned file is open (and by the child
// it is passed to), which the OS releases when its holders die, so that a
// claim is never stale. held is false, with the holder's note ("pid N"),
// while another process holds it.
func tryClaim(dir string) (f *os.File, held bool, holder string, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, false, "", err
	}
	path := filepath.Join(dir, ClaimFile)
	f, err = os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, false, "", err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			raw, _ := os.ReadFile(path)
			return nil, true, strings.TrimSpace(string(raw)), nil
		}
		return nil, false, "", fmt.Errorf("claim %s: %w", path, err)
	}
	// The note says who holds it, for the other runner's line.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt(fmt.Appendf(nil, "pid %d\n", os.Getpid()), 0)
	}
	return f, false, "", nil
}
