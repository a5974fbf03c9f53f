package bounded

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf8"
)

// ErrNotRegular is wrapped by OpenRegular's error for a path that is not a
// regular file (a named pipe, a device such as /dev/zero, a socket, a folder).
var ErrNotRegular = errors.New("not a regular file")

// OpenRegular opens path for reading only if it is a regular file (after
// following symbolic links). It opens without blocking, so a named pipe
// with no writer is refused instead of hanging open(2), and it checks the
// opened file itself (fstat), so a path swapped for a device after a check
// is still refused. The error names the path, quoted.
func OpenRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w (%s)", ErrNotRegular, kindOf(st.Mode()))}
	}
	// Back to blocking reads: a regular file never blocks, and Go's poller
	// need not know about it.
	if err := syscall.SetNonblock(int(f.Fd()), false); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func kindOf(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a folder"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "mode " + m.String()
}

// ReadFile reads a whole regular file (OpenRegular) of at most limit
// bytes; a larger one is a *LimitError naming what (e.g. "document
// /x/y.txt") read before anything is allocated for it.
func ReadFile(path string, limit int64, what string) ([]byte, error) {
	f, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%s: %w", Quote(path), &LimitError{What: what + " (" + Bytes(st.Size()) + ")", Limit: limit})
	}
	// The file may grow while it is read: never past limit.
	b, err := io.ReadAll(NewReader(f, limit, what))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Quote(path), err)
	}
	return b, nil
}

// Quote is how lcl names a file in a message: as is when it holds only
// printable characters (no quote or backslash, valid UTF-8), else Go-quoted,
// so a name holding a newline cannot forge a line of lcl's output, nor a
// bidirectional control character reorder it.
func Quote(name string) string {
	for _, r := range name {
		if !unicode.IsPrint(r) || r == '"' || r == '\\' || r == utf8.RuneError {
			return strconv.Quote(name)
		}
	}
	return name
}

// Line makes s safe to print as one line of a terminal: every control
// character (a newline, a carriage return, an escape sequence's ESC), and
// every invisible or bidirectional formatting character, is written as its
// Go escape (\n, \x1b, \u202e), so text from a file name or a file cannot
// forge a line of lcl's output or rewrite the screen.
func Line(s string) string {
	clean := true
	for _, r := range s {
		if unsafeRune(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unsafeRune(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func unsafeRune(r rune) bool {
	return r != '\t' && r != ' ' && !unicode.IsGraphic(r) || r == utf8.RuneError || unicode.Is(unicode.Cf, r)
}
