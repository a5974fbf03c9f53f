// Package bounded reads input whose sizes come from the input itself (a
// header's shape, a count, a compressed stream) without letting those sizes
// decide how much memory is allocated: products are overflow-checked, sizes
// are compared with what the file can still hold, buffers grow only as data
// arrives, decompression is capped, and long lines are errors that name
// their line. Every parser in lcl reads through it.
package bounded

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
)

// ErrTooLarge is wrapped by every error about input beyond a limit.
var ErrTooLarge = errors.New("input too large")

// LimitError is input beyond a limit: Limit bytes (or elements, as What says).
type LimitError struct {
	What  string // e.g. "decompressed stream"
	Limit int64  // the limit, in bytes
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%s is larger than %s (the limit)", e.What, Bytes(e.Limit))
}

func (e *LimitError) Unwrap() error { return ErrTooLarge }

// Product multiplies non-negative sizes; ok is false when one is negative
// or the product does not fit an int (a shape of 2³² × 2³² wraps to 0
// otherwise).
func Product(dims ...int) (n int, ok bool) {
	n = 1
	for _, d := range dims {
		if d < 0 {
			return 0, false
		}
		if d != 0 && n > math.MaxInt/d {
			return 0, false
		}
		n *= d
	}
	return n, true
}

// Product64 is Product for int64 sizes.
func Product64(dims ...int64) (n int64, ok bool) {
	n = 1
	for _, d := range dims {
		if d < 0 {
			return 0, false
		}
		if d != 0 && n > math.MaxInt64/d {
			return 0, false
		}
		n *= d
	}
	return n, true
}

// Remaining is how many bytes r can still deliver, when r says so: a
// regular *os.File (size less position), *bytes.Reader, *strings.Reader,
// *io.SectionReader, or an *io.LimitedReader over one of these. ok is false
// for streams (pipes, decompressors, buffered readers).
func Remaining(r io.Reader) (n int64, ok bool) {
	switch v := r.(type) {
	case *bytes.Reader:
		return int64(v.Len()), true
	case *strings.Reader:
		return int64(v.Len()), true
	case *io.SectionReader:
		pos, err := v.Seek(0, io.SeekCurrent)
		if err != nil {
			return 0, false
		}
		return v.Size() - pos, true
	case *io.LimitedReader:
		if inner, ok := Remaining(v.R); ok {
			return min(inner, v.N), true
		}
		return 0, false
	case *os.File:
		st, err := v.Stat()
		if err != nil || !st.Mode().IsRegular() {
			return 0, false
		}
		pos, err := v.Seek(0, io.SeekCurrent)
		if err != nil {
			return 0, false
		}
		return max(st.Size()-pos, 0), true
	}
	return 0, false
}

// growStep bounds each allocation of ReadFull: a header that announces
// gigabytes costs at most this much before the data runs out.
const growStep = 16 << 20

// ReadFull reads exactly n bytes from r. Unlike make+io.ReadFull it
// allocates as the data arrives (at most 16 MiB ahead of it) and refuses at
// once when r says it holds fewer bytes, so a header announcing more data
// than the input has costs no more memory than the input. A short input
// gives io.ErrUnexpectedEOF (io.EOF when it held nothing) and the bytes
// read.
func ReadFull(r io.Reader, n int64) ([]byte, error) {
	if n < 0 {
		return nil, fmt.Errorf("bounded: negative size %d", n)
	}
	if rem, ok := Remaining(r); ok && rem < n {
		return nil, &ShortError{Want: n, Have: rem}
	}
	buf := make([]byte, 0, min(n, growStep))
	for int64(len(buf)) < n {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, int(min(n-int64(len(buf)), max(int64(len(buf)), growStep))))
		}
		k, err := r.Read(buf[len(buf):int(min(int64(cap(buf)), n))])
		buf = buf[:len(buf)+k]
		if err != nil && int64(len(buf)) < n {
			if err == io.EOF {
				if len(buf) == 0 {
					return buf, io.EOF
				}
				return buf, io.ErrUnexpectedEOF
			}
			return buf, err
		}
	}
	return buf, nil
}

// ShortError is input that holds fewer bytes than its header announced.
type ShortError struct{ Want, Have int64 }

func (e *ShortError) Error() string {
	return fmt.Sprintf("announces %d bytes of data but holds only %d", e.Want, e.Have)
}

// Unwrap makes a ShortError an io.ErrUnexpectedEOF.
func (e *ShortError) Unwrap() error { return io.ErrUnexpectedEOF }

// Reader reads at most Limit bytes from R; reading past them fails with a
// *LimitError (the underlying data being longer), not io.EOF, so a capped
// decompressor cannot pass for a short one.
type Reader struct {
	R     io.Reader
	Limit int64
	What  string // names the input in the error, e.g. "decompressed IDX data"
	n     int64
}

// NewReader caps r at limit bytes.
func NewReader(r io.Reader, limit int64, what string) *Reader {
	return &Reader{R: r, Limit: limit, What: what}
}

func (l *Reader) Read(p []byte) (int, error) {
	if l.n >= l.Limit {
		// Probe one byte: exactly Limit bytes is fine.
		var one [1]byte
		k, err := l.R.Read(one[:])
		if k > 0 {
			return 0, &LimitError{What: l.What, Limit: l.Limit}
		}
		return 0, err
	}
	if int64(len(p)) > l.Limit-l.n {
		p = p[:l.Limit-l.n]
	}
	k, err := l.R.Read(p)
	l.n += int64(k)
	return k, err
}

// N is the number of bytes read so far.
func (l *Reader) N() int64 { return l.n }

// Scanner reads lines (without their "\n" or "\r\n"), counting them, with a
// longest line: a longer one is an error naming its number instead of
// bufio's bare "token too long".
type Scanner struct {
	sc   *bufio.Scanner
	max  int
	line int
	err  error
}

// NewScanner reads lines of at most max bytes from r.
func NewScanner(r io.Reader, max int) *Scanner {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, min(max, 64<<10)), max)
	return &Scanner{sc: sc, max: max}
}

// Scan advances to the next line.
func (s *Scanner) Scan() bool {
	if s.err != nil {
		return false
	}
	if s.sc.Scan() {
		s.line++
		return true
	}
	if err := s.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			s.err = fmt.Errorf("line %d: longer than %s (the limit): %w", s.line+1, Bytes(int64(s.max)), ErrTooLarge)
		} else {
			s.err = fmt.Errorf("line %d: %w", s.line+1, err)
		}
	}
	return false
}

// Text is the current line (bufio.ScanLines drops a final "\r").
func (s *Scanner) Text() string { return s.sc.Text() }

// Bytes is the current line, valid until the next Scan.
func (s *Scanner) Bytes() []byte { return s.sc.Bytes() }

// Line is the 1-based number of the current line.
func (s *Scanner) Line() int { return s.line }

// Err is the first error other than io.EOF; it names the line.
func (s *Scanner) Err() error { return s.err }

// Bytes spells a byte count for messages: "512 B", "64 MiB", "1.5 GiB".
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	v := float64(n) / float64(div)
	s := fmt.Sprintf("%.1f", v)
	s = strings.TrimSuffix(s, ".0")
	return s + " " + string("KMGTPE"[exp]) + "iB"
}
