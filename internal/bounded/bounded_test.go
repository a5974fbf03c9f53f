package bounded

import (
	"bytes"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
)

func TestProduct(t *testing.T) {
	for _, c := range []struct {
		dims []int
		want int
		ok   bool
	}{
		{nil, 1, true},
		{[]int{3, 4}, 12, true},
		{[]int{0, math.MaxInt}, 0, true},
		{[]int{1 << 32, 1 << 32}, 0, false}, // wraps to 0 without the check
		{[]int{1 << 31, 1 << 31, 2}, 0, false},
		{[]int{math.MaxInt, 1}, math.MaxInt, true},
		{[]int{-1, 5}, 0, false},
	} {
		got, ok := Product(c.dims...)
		if got != c.want || ok != c.ok {
			t.Errorf("Product(%v) = %d, %v; want %d, %v", c.dims, got, ok, c.want, c.ok)
		}
	}
	if _, ok := Product64(1<<32, 1<<31, 4); ok {
		t.Error("Product64(2^32, 2^31, 4) did not report the overflow")
	}
	if n, ok := Product64(1<<20, 1<<20); !ok || n != 1<<40 {
		t.Errorf("Product64(2^20, 2^20) = %d, %v", n, ok)
	}
}

func TestRemaining(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "x"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString("0123456789")
	f.Seek(3, io.SeekStart)
	for _, c := range []struct {
		name string
		r    io.Reader
		want int64
		ok   bool
	}{
		{"file", f, 7, true},
		{"bytes", bytes.NewReader([]byte("abc")), 3, true},
		{"strings", strings.NewReader("abcd"), 4, true},
		{"section", io.NewSectionReader(strings.NewReader("abcdef"), 1, 4), 4, true},
		{"limited", io.LimitReader(strings.NewReader("abcdef"), 2), 2, true},
		{"stream", iotest.OneByteReader(strings.NewReader("abc")), 0, false},
	} {
		n, ok := Remaining(c.r)
		if n != c.want || ok != c.ok {
			t.Errorf("%s: Remaining = %d, %v; want %d, %v", c.name, n, ok, c.want, c.ok)
		}
	}
}

func TestReadFull(t *testing.T) {
	data := bytes.Repeat([]byte("xyz"), 1000)
	got, err := ReadFull(iotest.HalfReader(bytes.NewBuffer(data)), int64(len(data)))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("ReadFull of a stream: %d bytes, %v", len(got), err)
	}
	// A known-size reader that is too short is refused before allocating.
	_, err = ReadFull(bytes.NewReader(data), 1<<40)
	var se *ShortError
	if !errors.As(err, &se) || se.Have != int64(len(data)) || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("ReadFull(1 TiB of a 3000-byte reader): %v", err)
	}
	// A stream that announces 1 TiB and holds 3000 bytes costs memory for
	// the 3000 bytes (well, one 16 MiB step), not a terabyte.
	got, err = ReadFull(iotest.OneByteReader(bytes.NewReader(data)), 1<<40)
	if !errors.Is(err, io.ErrUnexpectedEOF) || len(got) != len(data) || cap(got) > growStep {
		t.Fatalf("ReadFull(1 TiB of a 3000-byte stream): %d bytes (cap %d), %v", len(got), cap(got), err)
	}
	if _, err := ReadFull(iotest.OneByteReader(strings.NewReader("")), 5); err != io.EOF {
		t.Fatalf("ReadFull of nothing: %v, want io.EOF", err)
	}
	if _, err := ReadFull(iotest.ErrReader(io.ErrClosedPipe), 5); !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("ReadFull error: %v", err)
	}
	// Growth past one step keeps every byte.
	big := bytes.Repeat([]byte{7}, growStep+growStep/2)
	got, err = ReadFull(iotest.HalfReader(bytes.NewBuffer(big)), int64(len(big)))
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("ReadFull over two steps: %d bytes, %v", len(got), err)
	}
}

func TestReader(t *testing.T) {
	got, err := io.ReadAll(NewReader(strings.NewReader("12345"), 5, "x"))
	if err != nil || string(got) != "12345" {
		t.Fatalf("exactly at the limit: %q, %v", got, err)
	}
	_, err = io.ReadAll(NewReader(strings.NewReader("123456"), 5, "decompressed stream"))
	var le *LimitError
	if !errors.As(err, &le) || !errors.Is(err, ErrTooLarge) || err.Error() != "decompressed stream is larger than 5 B (the limit)" {
		t.Fatalf("past the limit: %v", err)
	}
}

func TestScanner(t *testing.T) {
	sc := NewScanner(strings.NewReader("a\r\nbb\n"+strings.Repeat("c", 100)+"\nd\n"), 16)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if sc.Line() != len(lines) {
			t.Errorf("Line() = %d after %d lines", sc.Line(), len(lines))
		}
	}
	if strings.Join(lines, ",") != "a,bb" {
		t.Errorf("lines %q", lines)
	}
	if err := sc.Err(); err == nil || err.Error() != "line 3: longer than 16 B (the limit): input too large" || !errors.Is(err, ErrTooLarge) {
		t.Errorf("Err() = %v", err)
	}
	if sc.Scan() {
		t.Error("Scan after an error")
	}
}

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1 KiB", 1536: "1.5 KiB", 64 << 20: "64 MiB", 3 << 30: "3 GiB", 1 << 40: "1 TiB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}
