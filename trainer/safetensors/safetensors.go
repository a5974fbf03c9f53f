// Package safetensors reads and writes the safetensors file format of
// Hugging Face: an 8-byte little-endian header length N, N bytes of JSON
// mapping each tensor name to {"dtype","shape","data_offsets":[begin,end]}
// (offsets relative to the end of the header) plus an optional
// "__metadata__" map of strings, then the raw little-endian tensor bytes.
package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/lcl-project/lcl/internal/bounded"
)

// Tensor is one named tensor.
type Tensor struct {
	Name  string
	DType string // F32, I64, F64, F16, BF16, I32, U8, ...
	Shape []int64
	Data  []byte
}

var sizes = map[string]int64{"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "I16": 2, "U16": 2, "F16": 2,
	"BF16": 2, "I32": 4, "U32": 4, "F32": 4, "F64": 8, "I64": 8, "U64": 8}

// maxHeader bounds the JSON header (the reference implementation uses 100 MB).
const maxHeader = 100 << 20

type entry struct {
	DType   string   `json:"dtype"`
	Shape   []int64  `json:"shape"`
	Offsets [2]int64 `json:"data_offsets"`
}

// Write writes tensors (in name order) and metadata to w.
func Write(w io.Writer, tensors []Tensor, meta map[string]string) error {
	srcs := make([]Source, len(tensors))
	for i, t := range tensors {
		srcs[i] = Source{Name: t.Name, DType: t.DType, Shape: t.Shape, Bytes: int64(len(t.Data)),
			WriteData: func(w io.Writer) error { _, err := w.Write(t.Data); return err }}
	}
	return WriteFrom(w, srcs, meta)
}

// Source is a tensor whose bytes are produced while the file is written, so
// a writer never needs every tensor in memory at once.
type Source struct {
	Name  string
	DType string
	Shape []int64
	// Bytes is the size of the data (it must match DType and Shape).
	Bytes int64
	// WriteData writes exactly Bytes bytes, the tensor's data, to w.
	WriteData func(w io.Writer) error
}

// WriteFrom writes the tensors of srcs (in name order) and metadata to w,
// asking each source for its data in turn.
func WriteFrom(w io.Writer, srcs []Source, meta map[string]string) error {
	ts := slices.Clone(srcs)
	slices.SortFunc(ts, func(a, b Source) int { return strings.Compare(a.Name, b.Name) })
	header := map[string]any{}
	if len(meta) > 0 {
		header["__metadata__"] = meta
	}
	var off int64
	for i, t := range ts {
		if i > 0 && ts[i-1].Name == t.Name {
			return fmt.Errorf("safetensors: tensor %q twice", t.Name)
		}
		if err := check(t.Name, t.DType, t.Shape, t.Bytes); err != nil {
			return err
		}
		shape := t.Shape
		if shape == nil {
			shape = []int64{}
		}
		header[t.Name] = entry{DType: t.DType, Shape: shape, Offsets: [2]int64{off, off + t.Bytes}}
		off += t.Bytes
	}
	h, err := json.Marshal(header)
	if err != nil {
		return fmt.Errorf("safetensors: header: %w", err)
	}
	// Pad the header with spaces so the data starts 8-byte aligned.
	for (8+len(h))%8 != 0 {
		h = append(h, ' ')
	}
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(h)))
	if _, err := w.Write(n[:]); err != nil {
		return err
	}
	if _, err := w.Write(h); err != nil {
		return err
	}
	for _, t := range ts {
		cw := &counter{w: w}
		if err := t.WriteData(cw); err != nil {
			return fmt.Errorf("safetensors: tensor %q: %w", t.Name, err)
		}
		if cw.n != t.Bytes {
			// The header already promised Bytes: the file would be corrupt.
			return fmt.Errorf("safetensors: tensor %q: %d bytes written, %d declared", t.Name, cw.n, t.Bytes)
		}
	}
	return nil
}

// counter counts the bytes written through it.
type counter struct {
	w io.Writer
	n int64
}

func (c *counter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func check(name, dtype string, shape []int64, nbytes int64) error {
	sz, ok := sizes[dtype]
	if !ok {
		return fmt.Errorf("safetensors: tensor %q: unknown dtype %q", name, dtype)
	}
	for _, d := range shape {
		if d < 0 {
			return fmt.Errorf("safetensors: tensor %q: negative dimension in shape %v", name, shape)
		}
	}
	// Overflow-checked: a shape of 2³² × 2³² would otherwise wrap to 0
	// elements and pass as an empty tensor.
	n, ok := bounded.Product64(append(slices.Clone(shape), sz)...)
	if !ok {
		return fmt.Errorf("safetensors: tensor %q: shape %v of %s has more elements than any file can hold", name, shape, dtype)
	}
	if n != nbytes {
		return fmt.Errorf("safetensors: tensor %q: %d bytes for %s%v (want %d)", name, nbytes, dtype, shape, n)
	}
	return nil
}

// ErrFormat marks a file that is not valid safetensors.
var ErrFormat = errors.New("not a valid safetensors file")

// ReadFile reads the safetensors file at path whole, after checking what its
// header declares against the file: the header is read first, and a file
// whose size is not exactly the header's plus the tensor data it declares
// (truncated, or followed by anything) is refused before its data is read,
// so a small file padded with gigabytes costs no memory. Only a regular file
// is read (a link to /dev/zero is refused). The bytes returned pass Read.
func ReadFile(path string) ([]byte, error) {
	f, size, hdr, err := openHeader(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, size)
	binary.LittleEndian.PutUint64(b, uint64(len(hdr)))
	copy(b[8:], hdr)
	if _, err := io.ReadFull(f, b[8+len(hdr):]); err != nil {
		return nil, fmt.Errorf("safetensors: %s: %w", bounded.Quote(path), err)
	}
	return b, nil
}

// ReadMeta reads only the header of the safetensors file at path (checked
// as ReadFile checks it) and returns its metadata.
func ReadMeta(path string) (map[string]string, error) {
	f, _, hdr, err := openHeader(path)
	if err != nil {
		return nil, err
	}
	f.Close()
	raw, err := parseHeader(hdr)
	if err != nil {
		return nil, err
	}
	var meta map[string]string
	if m, ok := raw["__metadata__"]; ok {
		if err := json.Unmarshal(m, &meta); err != nil {
			return nil, fmt.Errorf("safetensors: %w: __metadata__: %v", ErrFormat, err)
		}
	}
	return meta, nil
}

// openHeader opens path, reads its header and checks that the file holds
// exactly the data the header declares; f is positioned after the header.
func openHeader(path string) (f *os.File, size int64, hdr []byte, err error) {
	f, err = bounded.OpenRegular(path)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("safetensors: %w", err)
	}
	fail := func(format string, a ...any) (*os.File, int64, []byte, error) {
		f.Close()
		return nil, 0, nil, fmt.Errorf("safetensors: %s: %w: %s", bounded.Quote(path), ErrFormat, fmt.Sprintf(format, a...))
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, nil, err
	}
	size = st.Size()
	var n8 [8]byte
	if _, err := io.ReadFull(f, n8[:]); err != nil {
		return fail("%d bytes, shorter than the header length", size)
	}
	n := binary.LittleEndian.Uint64(n8[:])
	if n > maxHeader || n > uint64(size-8) {
		return fail("header length %d in a file of %d bytes", n, size)
	}
	if hdr, err = bounded.ReadFull(f, int64(n)); err != nil {
		return fail("header: %v", err)
	}
	raw, err := parseHeader(hdr)
	if err != nil {
		f.Close()
		return nil, 0, nil, fmt.Errorf("safetensors: %s: %w", bounded.Quote(path), err)
	}
	var end int64
	for name, m := range raw {
		if name == "__metadata__" {
			continue
		}
		var e entry
		if err := json.Unmarshal(m, &e); err != nil {
			return fail("tensor %q: %v", name, err)
		}
		end = max(end, e.Offsets[1])
	}
	if data := size - 8 - int64(n); data != end {
		return fail("its header declares %d bytes of tensor data, the file holds %d after the header (truncated, or followed by other data)", end, data)
	}
	return f, size, hdr, nil
}

// parseHeader decodes the JSON header into its entries, unparsed.
func parseHeader(hdr []byte) (map[string]json.RawMessage, error) {
	var raw map[string]json.RawMessage
	if err := json.NewDecoder(bytes.NewReader(hdr)).Decode(&raw); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrFormat, err)
	}
	return raw, nil
}

// Read parses a whole safetensors file held in b, validating the header,
// every tensor's size and that the data offsets tile the data exactly.
// The returned tensors alias b.
func Read(b []byte) ([]Tensor, map[string]string, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("safetensors: %w: %s", ErrFormat, fmt.Sprintf(format, a...))
	}
	if len(b) < 8 {
		return nil, nil, bad("%d bytes, shorter than the header length", len(b))
	}
	n := binary.LittleEndian.Uint64(b[:8])
	if n > maxHeader || n > uint64(len(b)-8) {
		return nil, nil, bad("header length %d in a file of %d bytes", n, len(b))
	}
	hdr, data := b[8:8+n], b[8+n:]
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(hdr))
	if err := dec.Decode(&raw); err != nil {
		return nil, nil, bad("header: %v", err)
	}
	var meta map[string]string
	if m, ok := raw["__metadata__"]; ok {
		if err := json.Unmarshal(m, &meta); err != nil {
			return nil, nil, bad("__metadata__: %v", err)
		}
		delete(raw, "__metadata__")
	}
	ts := make([]Tensor, 0, len(raw))
	es := make([]entry, 0, len(raw))
	for name, m := range raw {
		var e entry
		if err := json.Unmarshal(m, &e); err != nil {
			return nil, nil, bad("tensor %q: %v", name, err)
		}
		if e.Offsets[0] < 0 || e.Offsets[1] < e.Offsets[0] || e.Offsets[1] > int64(len(data)) {
			return nil, nil, bad("tensor %q: data offsets %v outside %d data bytes", name, e.Offsets, len(data))
		}
		if err := check(name, e.DType, e.Shape, e.Offsets[1]-e.Offsets[0]); err != nil {
			return nil, nil, fmt.Errorf("%w: %w", ErrFormat, err)
		}
		ts = append(ts, Tensor{Name: name, DType: e.DType, Shape: e.Shape, Data: data[e.Offsets[0]:e.Offsets[1]]})
		es = append(es, e)
	}
	idx := make([]int, len(es))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return int(es[a].Offsets[0] - es[b].Offsets[0]) })
	var end int64
	for _, i := range idx {
		if es[i].Offsets[0] != end {
			return nil, nil, bad("tensor %q starts at %d, want %d (gap or overlap)", ts[i].Name, es[i].Offsets[0], end)
		}
		end = es[i].Offsets[1]
	}
	if end != int64(len(data)) {
		return nil, nil, bad("tensors cover %d of %d data bytes (truncated or trailing data)", end, len(data))
	}
	slices.SortFunc(ts, func(a, b Tensor) int { return strings.Compare(a.Name, b.Name) })
	return ts, meta, nil
}

// FirstNonFinite is the index of t's first NaN or infinite value, or -1
// when it has none or is not a floating-point tensor.
func (t Tensor) FirstNonFinite() (index int, value float64) {
	var size int
	var at func(b []byte) float64
	switch t.DType {
	case "F32":
		size, at = 4, func(b []byte) float64 { return float64(math.Float32frombits(binary.LittleEndian.Uint32(b))) }
	case "F64":
		size, at = 8, func(b []byte) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(b)) }
	case "F16":
		// Exponent all ones: infinite or NaN.
		size, at = 2, func(b []byte) float64 {
			if h := binary.LittleEndian.Uint16(b); h&0x7c00 == 0x7c00 {
				if h&0x3ff != 0 {
					return math.NaN()
				}
				return math.Inf(1 - 2*int(h>>15))
			}
			return 0
		}
	case "BF16":
		size, at = 2, func(b []byte) float64 {
			return float64(math.Float32frombits(uint32(binary.LittleEndian.Uint16(b)) << 16))
		}
	default:
		return -1, 0
	}
	for i := 0; i+size <= len(t.Data); i += size {
		if v := at(t.Data[i : i+size]); math.IsNaN(v) || math.IsInf(v, 0) {
			return i / size, v
		}
	}
	return -1, 0
}
