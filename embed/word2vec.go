package embed

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// Vectors is a keyed set of vectors as in a word2vec file: row i of Data
// (Dim values) belongs to Keys[i].
type Vectors struct {
	Keys []string
	Dim  int
	Data []float32
}

// Row returns the vector of row i (shared storage).
func (v *Vectors) Row(i int) []float32 { return v.Data[i*v.Dim : (i+1)*v.Dim] }

// ErrBadVectors is wrapped by every error about a malformed word2vec file;
// the message names the line (text format) or byte offset (binary format).
var ErrBadVectors = errors.New("malformed word2vec file")

// WriteWord2Vec writes v in word2vec format, the one of gensim's
// KeyedVectors.save_word2vec_format: a header line "count dim", then per
// key either "key v1 … vdim\n" (text) or "key " followed by dim
// little-endian float32 and "\n" (binary). Keys must not contain white
// space.
func WriteWord2Vec(w io.Writer, v *Vectors, binaryFormat bool) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "%d %d\n", len(v.Keys), v.Dim)
	var b [4]byte
	num := make([]byte, 0, 32)
	for i, k := range v.Keys {
		if k == "" || strings.ContainsAny(k, " \t\n\r") {
			return fmt.Errorf("word2vec: key %d %q: empty or contains white space", i, k)
		}
		bw.WriteString(k)
		if binaryFormat {
			bw.WriteByte(' ')
			for _, x := range v.Row(i) {
				binary.LittleEndian.PutUint32(b[:], math.Float32bits(x))
				bw.Write(b[:])
			}
		} else {
			for _, x := range v.Row(i) {
				bw.WriteByte(' ')
				bw.Write(strconv.AppendFloat(num[:0], float64(x), 'g', -1, 32))
			}
		}
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// SaveWord2Vec writes v to path atomically (see WriteWord2Vec).
func SaveWord2Vec(path string, v *Vectors, binaryFormat bool) error {
	return writeAtomic(path, func(w io.Writer) error { return WriteWord2Vec(w, v, binaryFormat) })
}

// ReadWord2Vec reads a word2vec file in text or binary format. The header
// line gives the count and dimension; fewer records than announced, a
// record with the wrong number of values, an unparsable number, or a
// duplicate key is an error naming the line (text) or byte offset (binary).
func ReadWord2Vec(r io.Reader, binaryFormat bool) (*Vectors, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	header, err := br.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("%w: line 1: header: %w", ErrBadVectors, eof(err))
	}
	fs := strings.Fields(header)
	if len(fs) != 2 {
		return nil, fmt.Errorf("%w: line 1: header %q: want \"count dim\"", ErrBadVectors, strings.TrimSpace(header))
	}
	n, err1 := strconv.Atoi(fs[0])
	dim, err2 := strconv.Atoi(fs[1])
	if err1 != nil || err2 != nil || n < 0 || dim < 1 || n > 1<<28 || dim > MaxDim {
		return nil, fmt.Errorf("%w: line 1: header %q: want two positive integers \"count dim\"", ErrBadVectors, strings.TrimSpace(header))
	}
	// The header's count only bounds the loop: storage grows with the
	// records actually read, so "1048576 65536" in a 34-byte file costs
	// nothing.
	v := &Vectors{Dim: dim, Keys: make([]string, 0, min(n, 1<<12)), Data: make([]float32, 0, min(n*dim, 1<<16))}
	seen := make(map[string]bool, min(n, 1<<12))
	if binaryFormat {
		err = readBinaryRecords(br, v, n, int64(len(header)), seen)
	} else {
		err = readTextRecords(br, v, n, seen)
	}
	if err != nil {
		return nil, err
	}
	return v, nil
}

func eof(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

func readTextRecords(br *bufio.Reader, v *Vectors, n int, seen map[string]bool) error {
	for i := range n {
		line := i + 2
		s, err := br.ReadString('\n')
		if err != nil && (err != io.EOF || s == "") {
			return fmt.Errorf("%w: line %d: record %d of %d: %w", ErrBadVectors, line, i+1, n, eof(err))
		}
		fs := strings.Fields(s)
		if len(fs) != v.Dim+1 {
			return fmt.Errorf("%w: line %d: %d fields, want key and %d values", ErrBadVectors, line, len(fs), v.Dim)
		}
		if seen[fs[0]] {
			return fmt.Errorf("%w: line %d: duplicate key %q", ErrBadVectors, line, fs[0])
		}
		seen[fs[0]] = true
		v.Keys = append(v.Keys, fs[0])
		for j, f := range fs[1:] {
			x, err := strconv.ParseFloat(f, 32)
			if err != nil {
				return fmt.Errorf("%w: line %d: value %d %q: not a number", ErrBadVectors, line, j+1, f)
			}
			v.Data = append(v.Data, float32(x))
		}
	}
	return trailing(br, fmt.Sprintf("line %d", n+2))
}

func readBinaryRecords(br *bufio.Reader, v *Vectors, n int, off int64, seen map[string]bool) error {
	buf := make([]byte, 4*v.Dim)
	for i := range n {
		start := off
		key, err := br.ReadString(' ')
		if err != nil {
			return fmt.Errorf("%w: offset %d: key of record %d of %d: %w", ErrBadVectors, start, i+1, n, eof(err))
		}
		off += int64(len(key))
		// Writers differ on whether a record ends with "\n"; gensim and
		// word2vec.c skip it before the next key.
		key = strings.TrimLeft(key[:len(key)-1], "\n")
		if key == "" || len(key) > 1<<16 || strings.ContainsAny(key, "\n\x00") {
			return fmt.Errorf("%w: offset %d: record %d: bad key %q", ErrBadVectors, start, i+1, trunc(key))
		}
		if seen[key] {
			return fmt.Errorf("%w: offset %d: duplicate key %q", ErrBadVectors, start, key)
		}
		seen[key] = true
		if k, err := io.ReadFull(br, buf); err != nil {
			return fmt.Errorf("%w: offset %d: vector of %q: %d of %d bytes: %w", ErrBadVectors, off, key, k, len(buf), eof(err))
		}
		off += int64(len(buf))
		v.Keys = append(v.Keys, key)
		for j := range v.Dim {
			v.Data = append(v.Data, math.Float32frombits(binary.LittleEndian.Uint32(buf[4*j:])))
		}
		if b, err := br.Peek(1); err == nil && b[0] == '\n' {
			br.ReadByte()
			off++
		}
	}
	return trailing(br, fmt.Sprintf("offset %d", off))
}

// trailing rejects data after the announced records (other than blank
// space), which means the count in the header is wrong.
func trailing(br *bufio.Reader, where string) error {
	rest, _ := io.ReadAll(io.LimitReader(br, 1<<10))
	if len(bytes.TrimSpace(rest)) > 0 {
		return fmt.Errorf("%w: %s: data after the number of records the header announced", ErrBadVectors, where)
	}
	return nil
}

func trunc(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// LoadWord2Vec reads a word2vec file, detecting the format: binary when the
// bytes after the first key are not text.
func LoadWord2Vec(path string) (*Vectors, bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<16)
	head, _ := br.Peek(1 << 16)
	bin := isBinaryWord2Vec(head)
	v, err := ReadWord2Vec(br, bin)
	if err != nil {
		return nil, bin, fmt.Errorf("%s: %w", path, err)
	}
	return v, bin, nil
}

// isBinaryWord2Vec looks at the bytes after the first key: in text format
// they are numbers up to the end of the line, in binary format raw float32s,
// which almost surely contain a byte that no number is written with.
func isBinaryWord2Vec(head []byte) bool {
	_, rest, ok := bytes.Cut(head, []byte{'\n'})
	if !ok {
		return false
	}
	if _, rest, ok = bytes.Cut(rest, []byte{' '}); !ok {
		return false
	}
	for _, c := range rest[:min(len(rest), 256)] {
		if c == '\n' {
			return false
		}
		if !strings.ContainsRune("0123456789+-.eEinfaINFA \t\r", rune(c)) {
			return true
		}
	}
	return false
}

// DocVectors returns the model's document vectors keyed by tag.
func (m *Model) DocVectors() *Vectors {
	return &Vectors{Keys: m.Tags, Dim: m.Options.Dim, Data: m.DocVecs}
}

// WordVectors returns the model's word vectors keyed by word.
func (m *Model) WordVectors() *Vectors {
	return &Vectors{Keys: m.Vocab.Words, Dim: m.Options.Dim, Data: m.WordVecs}
}

// FromWordVectors makes a model of imported word vectors only: it can give
// MeanWordVector (and Vector, which falls back to it) but not Infer.
func FromWordVectors(v *Vectors) *Model {
	o := DefaultOptions()
	o.Dim = v.Dim
	m, _ := newModel(newVocab(v.Keys, make([]int64, len(v.Keys)), 0), o)
	m.WordVecs = v.Data
	return m
}
