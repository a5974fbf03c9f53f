package embed

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/lcl-project/lcl/internal/atomicfile"
	"github.com/lcl-project/lcl/internal/bounded"
	"hash"
	"hash/crc32"
	"io"
	"math"
	"os"
)

// Model file format (all integers little-endian), version 1:
//
//	magic    "LCLD2V\x00\x01" (8 bytes: name, 0, format version)
//	header   uint32 length + JSON of Options (mode, dbow_words, dim, ...)
//	vocab    uint32 n, then n × (uvarint byte length, UTF-8 word, uvarint count)
//	tags     uint32 n, then n × (uvarint byte length, UTF-8 tag)
//	matrices WordVecs, OutVecs, DocVecs: each uint64 element count + float32s
//	checksum uint32 CRC-32C (Castagnoli) of every byte before it
//
// A reader refuses other magics and versions, and a file whose checksum,
// sizes or counts do not add up.
const (
	modelMagic   = "LCLD2V\x00"
	modelVersion = 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Save writes the model to path atomically: into a temporary file in the
// same directory, synced, then renamed over path.
func (m *Model) Save(path string) error {
	return writeAtomic(path, m.Encode)
}

// Encode writes the model in the binary format described above.
func (m *Model) Encode(w io.Writer) error {
	h := crc32.New(castagnoli)
	bw := bufio.NewWriter(io.MultiWriter(w, h))
	bw.WriteString(modelMagic)
	bw.WriteByte(modelVersion)
	hdr, err := json.Marshal(m.Options)
	if err != nil {
		return err
	}
	var b [binary.MaxVarintLen64]byte
	u32 := func(x int) { binary.LittleEndian.PutUint32(b[:4], uint32(x)); bw.Write(b[:4]) }
	str := func(s string) { bw.Write(binary.AppendUvarint(b[:0], uint64(len(s)))); bw.WriteString(s) }
	u32(len(hdr))
	bw.Write(hdr)
	u32(m.Vocab.Len())
	for i, word := range m.Vocab.Words {
		str(word)
		bw.Write(binary.AppendUvarint(b[:0], uint64(m.Vocab.Counts[i])))
	}
	u32(len(m.Tags))
	for _, t := range m.Tags {
		str(t)
	}
	for _, mat := range [][]float32{m.WordVecs, m.OutVecs, m.DocVecs} {
		binary.LittleEndian.PutUint64(b[:8], uint64(len(mat)))
		bw.Write(b[:8])
		for _, x := range mat {
			binary.LittleEndian.PutUint32(b[:4], math.Float32bits(x))
			bw.Write(b[:4])
		}
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	binary.LittleEndian.PutUint32(b[:4], h.Sum32())
	_, err = w.Write(b[:4])
	return err
}

// Load reads a model written by Save.
func Load(path string) (*Model, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m, err := ReadModel(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// ErrBadModel is wrapped by every error about a malformed model file.
var ErrBadModel = errors.New("not a valid lcl doc2vec model")

type countingReader struct {
	r   *bufio.Reader
	h   hash.Hash32
	off int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.h.Write(p[:n])
	c.off += int64(n)
	return n, err
}

func (c *countingReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.h.Write([]byte{b})
		c.off++
	}
	return b, err
}

// ReadModel reads a model in the format written by Encode.
func ReadModel(r io.Reader) (*Model, error) {
	cr := &countingReader{r: bufio.NewReaderSize(r, 1<<16), h: crc32.New(castagnoli)}
	var b [8]byte
	if _, err := io.ReadFull(cr, b[:8]); err != nil {
		return nil, cr.bad("reading magic", err)
	}
	if string(b[:7]) != modelMagic {
		return nil, cr.bad(fmt.Sprintf("magic %q, want %q", b[:7], modelMagic), nil)
	}
	if b[7] != modelVersion {
		return nil, cr.bad(fmt.Sprintf("format version %d, this program reads %d", b[7], modelVersion), nil)
	}
	o, err := cr.header()
	if err != nil {
		return nil, err
	}
	words, counts, err := cr.vocabulary()
	if err != nil {
		return nil, err
	}
	nt, err := cr.u32("tag count")
	if err != nil {
		return nil, err
	}
	tags := make([]string, 0, min(nt, 1<<12))
	for i := range nt {
		t, err := cr.str(fmt.Sprintf("tag %d", i))
		if err != nil {
			return nil, err
		}
		tags = append(tags, t)
	}
	var mats [3][]float32
	names := []string{"word vectors", "output weights", "document vectors"}
	for k, rows := range []int{len(words), len(words), nt} {
		// The output weights may be absent (0 values).
		if mats[k], err = cr.matrix(names[k], rows, o.Dim, k == 1); err != nil {
			return nil, err
		}
	}
	sum := cr.h.Sum32()
	if _, err := io.ReadFull(cr.r, b[:4]); err != nil {
		return nil, cr.bad("checksum", err)
	}
	if got := binary.LittleEndian.Uint32(b[:4]); got != sum {
		return nil, cr.bad(fmt.Sprintf("checksum %08x, content gives %08x (file corrupted)", got, sum), nil)
	}
	if _, err := cr.r.ReadByte(); err != io.EOF {
		return nil, cr.bad("trailing data after checksum", nil)
	}
	m, err := Assemble(o, words, counts, tags, mats[0], mats[1], mats[2])
	if err != nil {
		return nil, cr.bad("vocabulary", err)
	}
	return m, nil
}

// Assemble builds a model from the parts Encode writes: settings,
// vocabulary (words, most frequent first, and counts), document tags, word
// vectors, output weights (nil for word vectors only) and document vectors.
// It is how a model kept elsewhere than in a model file (lcl's store) is
// read back; the slices are used, not copied.
func Assemble(o Options, words []string, counts []int64, tags []string, wordVecs, outVecs, docVecs []float32) (*Model, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	switch d := o.Dim; {
	case len(counts) != len(words):
		return nil, fmt.Errorf("embed: %d words, %d counts", len(words), len(counts))
	case len(wordVecs) != len(words)*d:
		return nil, fmt.Errorf("embed: word vectors: %d values, want %d words × %d", len(wordVecs), len(words), d)
	case outVecs != nil && len(outVecs) != len(words)*d:
		return nil, fmt.Errorf("embed: output weights: %d values, want %d words × %d", len(outVecs), len(words), d)
	case len(docVecs) != len(tags)*d:
		return nil, fmt.Errorf("embed: document vectors: %d values, want %d tags × %d", len(docVecs), len(tags), d)
	}
	m, err := newModel(newVocab(words, counts, o.Sample), o)
	if err != nil {
		return nil, err
	}
	m.WordVecs, m.OutVecs, m.DocVecs = wordVecs, outVecs, docVecs
	m.Tags = tags
	for i, t := range tags {
		m.tagIndex[t] = i
	}
	return m, nil
}

// bad is ErrBadModel at the reader's offset: what is wrong, and the read
// error (an early end of the file is io.ErrUnexpectedEOF).
func (cr *countingReader) bad(what string, err error) error {
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return fmt.Errorf("%w: offset %d: %s: %w", ErrBadModel, cr.off, what, err)
	}
	return fmt.Errorf("%w: offset %d: %s", ErrBadModel, cr.off, what)
}

// u32 reads a little-endian uint32.
func (cr *countingReader) u32(what string) (int, error) {
	var b [4]byte
	if _, err := io.ReadFull(cr, b[:]); err != nil {
		return 0, cr.bad(what, err)
	}
	return int(binary.LittleEndian.Uint32(b[:])), nil
}

// str reads a string of at most 1 MiB after its uvarint length.
func (cr *countingReader) str(what string) (string, error) {
	n, err := binary.ReadUvarint(cr)
	if err != nil {
		return "", cr.bad(what, err)
	}
	if n > 1<<20 {
		return "", cr.bad(fmt.Sprintf("%s: length %d too large", what, n), nil)
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(cr, p); err != nil {
		return "", cr.bad(what, err)
	}
	return string(p), nil
}

// header reads the JSON Options of at most 1 MiB after their length, and
// checks them.
func (cr *countingReader) header() (Options, error) {
	var o Options
	n, err := cr.u32("header length")
	if err != nil {
		return o, err
	}
	if n > 1<<20 {
		return o, cr.bad(fmt.Sprintf("header length %d too large", n), nil)
	}
	hdr := make([]byte, n)
	if _, err := io.ReadFull(cr, hdr); err != nil {
		return o, cr.bad("header", err)
	}
	if err := json.Unmarshal(hdr, &o); err != nil {
		return o, cr.bad("header", err)
	}
	if err := o.validate(); err != nil {
		return o, cr.bad("header", err)
	}
	return o, nil
}

// vocabulary reads the words and their counts after their number.
func (cr *countingReader) vocabulary() ([]string, []int64, error) {
	nv, err := cr.u32("vocabulary size")
	if err != nil {
		return nil, nil, err
	}
	words, counts := make([]string, 0, min(nv, 1<<12)), make([]int64, 0, min(nv, 1<<12))
	for i := range nv {
		w, err := cr.str(fmt.Sprintf("word %d", i))
		if err != nil {
			return nil, nil, err
		}
		c, err := binary.ReadUvarint(cr)
		if err != nil {
			return nil, nil, cr.bad(fmt.Sprintf("count of word %d", i), err)
		}
		words, counts = append(words, w), append(counts, int64(c))
	}
	return words, counts, nil
}

// matrix reads a rows×dim float32 matrix after its number of values (0,
// and a nil matrix, only where mayBeEmpty).
func (cr *countingReader) matrix(name string, rows, dim int, mayBeEmpty bool) ([]float32, error) {
	want, ok := bounded.Product(rows, dim)
	if !ok {
		return nil, cr.bad(fmt.Sprintf("%s: %d×%d values overflow", name, rows, dim), nil)
	}
	var b [8]byte
	if _, err := io.ReadFull(cr, b[:]); err != nil {
		return nil, cr.bad(name, err)
	}
	if n := binary.LittleEndian.Uint64(b[:]); n != uint64(want) && !(mayBeEmpty && n == 0) {
		return nil, cr.bad(fmt.Sprintf("%s: %d values, want %d", name, n, want), nil)
	} else if n == 0 {
		return nil, nil
	}
	// Grow with the rows read, so a header that announces more than the
	// file holds fails at its end instead of allocating up front.
	m := make([]float32, 0, min(want, 1<<20))
	p := make([]byte, 4*dim)
	for len(m) < want {
		if _, err := io.ReadFull(cr, p); err != nil {
			return nil, cr.bad(name, err)
		}
		for j := range dim {
			m = append(m, math.Float32frombits(binary.LittleEndian.Uint32(p[4*j:])))
		}
	}
	return m, nil
}

// writeAtomic writes a file so readers never see a partial one.
func writeAtomic(path string, write func(io.Writer) error) error {
	_, err := atomicfile.Write(path, 0o644, write)
	return err
}
