package simstore

import (
	"errors"
	"fmt"

	"github.com/lcl-project/lcl/internal/bounded"
)

// ErrNoSpace is wrapped by the error of a write refused for lack of disk
// space.
var ErrNoSpace = errors.New("not enough free disk space")

// Badger writes through memory-mapped files: a write to a page the disk
// cannot hold kills the process with SIGBUS instead of returning an error.
// So the store checks the free space before it writes, and refuses with an
// error while there is less than headroom + twice the bytes to write (the
// value log and the write-ahead log each take a copy; a memtable flush or
// compaction writes a table of up to a memtable's size).
const headroom = 64<<20 + memTableSize

const memTableSize = 64 << 20

// checkSpace refuses a write of n bytes when the disk holding the store has
// too little free space.
func (s *Store) checkSpace(n int64) error {
	if s == nil || s.inMemory || s.freeSpace == nil {
		return nil
	}
	free, err := s.freeSpace(s.dir)
	if err != nil {
		return nil // cannot tell: let the write try
	}
	if need := headroom + 2*n; free < need {
		return fmt.Errorf("simstore: %s: %w: %s free, writing needs at least %s; free some space or use --store on another disk (nothing was written)",
			s.dir, ErrNoSpace, bounded.Bytes(free), bounded.Bytes(need))
	}
	return nil
}
