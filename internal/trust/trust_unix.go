//go:build unix

package trust

import (
	"io/fs"
	"syscall"
)

// ownerOf returns the uid owning a file.
func ownerOf(fi fs.FileInfo) (int, bool) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid), true
	}
	return 0, false
}
