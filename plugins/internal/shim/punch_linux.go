package shim

import (
	"os"
	"syscall"
)

// releaseRead gives back the memory of bytes [off, off+n) of a file the
// reader will remove anyway (a punched hole): on tmpfs a 1.9 GB matrix is
// then never in memory twice, the file shrinking as its copy grows.
// Failure only means the pages stay until the file is removed.
func releaseRead(f *os.File, off, n int64) {
	const keepSize, punchHole = 0x01, 0x02 // FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE
	syscall.Fallocate(int(f.Fd()), keepSize|punchHole, off, n)
}
