package bounded

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A named pipe (no writer: open(2) would block for ever), a symbolic link
// to /dev/zero (reading would never end) and a folder are refused at once;
// a file over the limit is refused before it is read.
func TestReadFileOnlyRegularWithinLimit(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.jpg")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero.safetensors")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.txt")
	os.WriteFile(big, []byte(strings.Repeat("x", 1001)), 0o644)
	ok := filepath.Join(dir, "ok.txt")
	os.WriteFile(ok, []byte("hello"), 0o644)
	for _, c := range []struct {
		path, want string
	}{
		{fifo, "not a regular file (a named pipe)"},
		{zero, "not a regular file (a character device)"},
		{dir, "not a regular file (a folder)"},
		{big, "text (1001 B) is larger than 1000 B (the limit)"},
	} {
		done := make(chan error, 1)
		go func() { _, err := ReadFile(c.path, 1000, "text"); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.path) {
				t.Errorf("%s: %v, want an error naming it with %q", c.path, err, c.want)
			}
			if c.path != big && !errors.Is(err, ErrNotRegular) {
				t.Errorf("%s: %v does not wrap ErrNotRegular", c.path, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: ReadFile still blocked after 5 s", c.path)
		}
	}
	if b, err := ReadFile(ok, 5, "text"); err != nil || string(b) != "hello" {
		t.Errorf("a regular file at the limit: %q, %v", b, err)
	}
}

func TestQuote(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"/data/train/cat/1.jpg", "/data/train/cat/1.jpg"},
		{"/d/été à.png", "/d/été à.png"},
		{"a\nlcl: run finished OK", `"a\nlcl: run finished OK"`},
		{"x\x1b[2Jy", `"x\x1b[2Jy"`},
		{"bidi\u202etxt", `"bidi\u202etxt"`},
		{"bad\xffutf8", `"bad\xffutf8"`},
		{`q"uote`, `"q\"uote"`},
	} {
		if got := Quote(c.in); got != c.want {
			t.Errorf("Quote(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestLine(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain: /a/b c.jpg\tok", "plain: /a/b c.jpg\tok"},
		{"été", "été"},
		{"x\nlcl: run finished OK", `x\nlcl: run finished OK`},
		{"a\r\x1b[2Kb", `a\r\x1b[2Kb`},
		{"bidi\u202etxt", `bidi\u202etxt`},
		{"bad\xffbyte", `bad\xffbyte`},
	} {
		if got := Line(c.in); got != c.want {
			t.Errorf("Line(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
