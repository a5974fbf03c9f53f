// Package atomicfile writes files so that readers and crashes see either the
// old content or the new, never a partial file: the data goes to a temporary
// file in the same folder, which is synced, renamed over the target, and the
// folder synced.
package atomicfile

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Write creates or replaces path with what write produces and returns the
// number of bytes written. On any error path is left as it was.
func Write(path string, perm os.FileMode, write func(io.Writer) error) (n int64, err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return 0, fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(f.Name()) // no-op once renamed
	cw := &countingWriter{w: f}
	bw := bufio.NewWriterSize(cw, 256<<10)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), perm)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		return 0, fmt.Errorf("write %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil { // make the rename itself durable
		d.Sync()
		d.Close()
	}
	return cw.n, nil
}

// WriteFile is Write for data already in memory.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	_, err := Write(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
	return err
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
