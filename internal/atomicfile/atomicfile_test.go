package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteReplacesOrKeeps(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.txt")
	if err := WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	n, err := Write(path, 0o644, func(w io.Writer) error {
		w.Write([]byte("partial new content"))
		return boom
	})
	if !errors.Is(err, boom) || n != 0 {
		t.Fatalf("Write = %d, %v; want the writer's error", n, err)
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Fatalf("after a failed write the file holds %q, want the old content", b)
	}
	n, err = Write(path, 0o644, func(w io.Writer) error { _, err := w.Write([]byte("new!")); return err })
	if err != nil || n != 4 {
		t.Fatalf("Write = %d, %v", n, err)
	}
	st, _ := os.Stat(path)
	if b, _ := os.ReadFile(path); string(b) != "new!" || st.Mode().Perm() != 0o644 {
		t.Fatalf("file %q mode %v", b, st.Mode())
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*tmp*")); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}
