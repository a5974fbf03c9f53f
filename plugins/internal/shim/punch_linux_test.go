package shim

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// releaseRead frees the pages it is given: the file keeps its size and
// loses its blocks (on tmpfs, its memory).
func TestReleaseReadPunchesHoles(t *testing.T) {
	for _, dir := range []string{t.TempDir(), "/dev/shm"} {
		f, err := os.CreateTemp(dir, "punch-*")
		if err != nil {
			t.Fatal(err)
		}
		defer os.Remove(f.Name())
		if _, err := f.Write(make([]byte, 8<<20)); err != nil {
			t.Fatal(err)
		}
		f.Sync()
		blocks := func() int64 {
			var st syscall.Stat_t
			if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
				t.Fatal(err)
			}
			return st.Blocks
		}
		before := blocks()
		releaseRead(f, 0, 6<<20)
		after := blocks()
		if fi, _ := f.Stat(); fi.Size() != 8<<20 || after*4 > before*2 {
			t.Errorf("%s: %d bytes, %d blocks after releasing 6 of 8 MiB (before: %d)", filepath.Base(dir), fi.Size(), after, before)
		}
		f.Close()
	}
}
