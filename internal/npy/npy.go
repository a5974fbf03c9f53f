// Package npy reads and writes 2-D float matrices in NumPy's .npy format
// (version 1.0/2.0/3.0 headers; little- and big-endian float32/float64, C or
// Fortran order, on read; little-endian float64 or float32, C order, on
// write). It is lcl's one .npy codec: similarity matrices, per-epoch targets
// and store exports.
package npy

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/lcl-project/lcl/internal/atomicfile"
	"github.com/lcl-project/lcl/internal/bounded"
)

var magic = []byte("\x93NUMPY")

// MaxElements bounds the elements of one array (2³¹: a 46341×46341
// matrix, 16 GiB of float64).
const MaxElements = 1 << 31

func shapeString(shape []int) string {
	parts := make([]string, len(shape))
	for i, d := range shape {
		parts[i] = strconv.Itoa(d)
	}
	if len(parts) == 1 {
		return "(" + parts[0] + ",)"
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// Read decodes a 2-D (or 1-D, as one row) float array: rows, cols, row-major data.
//
// Sizes in the header are checked before anything is allocated: the element
// count must not overflow, and a header announcing more data than a file or
// in-memory reader holds is refused at once (a stream is read as the data
// arrives), so a 128-byte file claiming a 2³²×2³² shape costs nothing.
func Read(r io.Reader) (rows, cols int, data []float64, err error) {
	h, br, err := readHeader(r)
	if err != nil {
		return 0, 0, nil, err
	}
	raw, err := bounded.ReadFull(br, int64(h.bytes))
	if err != nil {
		return 0, 0, nil, h.short(len(raw), err)
	}
	data = make([]float64, h.bytes/h.size)
	for k := range data {
		var x float64
		if h.size == 4 {
			x = float64(math.Float32frombits(h.order.Uint32(raw[k*4:])))
		} else {
			x = math.Float64frombits(h.order.Uint64(raw[k*8:]))
		}
		data[h.at(k)] = x
	}
	return h.rows, h.cols, data, nil
}

// Read32 is Read into float32 (float64 data is rounded), reading the data
// in blocks into the result: a 21,843² '<f4' matrix (1.9 GB) costs one copy
// of itself, not its float64 form.
func Read32(r io.Reader) (rows, cols int, data []float32, err error) {
	h, br, err := readHeader(r)
	if err != nil {
		return 0, 0, nil, err
	}
	data = make([]float32, h.bytes/h.size)
	buf := make([]byte, 1<<20-(1<<20)%h.size)
	read := 0
	for k := 0; read < h.bytes; {
		n, err := io.ReadFull(br, buf[:min(len(buf), h.bytes-read)])
		read += n
		if err != nil {
			return 0, 0, nil, h.short(read, err)
		}
		for o := 0; o < n; o, k = o+h.size, k+1 {
			var x float32
			if h.size == 4 {
				x = math.Float32frombits(h.order.Uint32(buf[o:]))
			} else {
				x = float32(math.Float64frombits(h.order.Uint64(buf[o:])))
			}
			data[h.at(k)] = x
		}
	}
	return h.rows, h.cols, data, nil
}

// arrayHeader is what an .npy header says about the data that follows.
type arrayHeader struct {
	rows, cols int
	descr      string
	shape      []int
	fortran    bool
	order      binary.ByteOrder
	size       int // bytes per element
	bytes      int // of data
}

// at is the row-major position of the k-th element in file order.
func (h *arrayHeader) at(k int) int {
	if h.fortran { // column-major: element k is (k%rows, k/rows)
		return (k%h.rows)*h.cols + k/h.rows
	}
	return k
}

func (h *arrayHeader) short(got int, err error) error {
	return fmt.Errorf("npy: shape %s of %s needs %d bytes of data, the file holds %d: %w", shapeString(h.shape), h.descr, h.bytes, got, err)
}

// readHeader reads the magic and header of r and checks the sizes it
// announces before anything is allocated for the data.
func readHeader(r io.Reader) (*arrayHeader, *bufio.Reader, error) {
	avail, known := bounded.Remaining(r)
	br := bufio.NewReader(r)
	pre := make([]byte, 8)
	if _, err := io.ReadFull(br, pre); err != nil {
		return nil, nil, fmt.Errorf("npy: reading magic: %w", err)
	}
	if !bytes.Equal(pre[:6], magic) {
		return nil, nil, fmt.Errorf("npy: not an .npy file (bad magic)")
	}
	var hlen, lenField int
	switch pre[6] {
	case 1:
		lenField = 2
		var b [2]byte
		if _, err := io.ReadFull(br, b[:]); err != nil {
			return nil, nil, fmt.Errorf("npy: reading header length: %w", err)
		}
		hlen = int(binary.LittleEndian.Uint16(b[:]))
	case 2, 3:
		lenField = 4
		var b [4]byte
		if _, err := io.ReadFull(br, b[:]); err != nil {
			return nil, nil, fmt.Errorf("npy: reading header length: %w", err)
		}
		hlen = int(binary.LittleEndian.Uint32(b[:]))
	default:
		return nil, nil, fmt.Errorf("npy: unsupported format version %d.%d", pre[6], pre[7])
	}
	if hlen > 1<<20 || known && int64(8+lenField+hlen) > avail {
		return nil, nil, fmt.Errorf("npy: header of %d bytes is longer than the file or the 1 MiB limit", hlen)
	}
	hb := make([]byte, hlen)
	if _, err := io.ReadFull(br, hb); err != nil {
		return nil, nil, fmt.Errorf("npy: reading header: %w", err)
	}
	descr, fortran, shape, err := parseHeader(string(hb))
	if err != nil {
		return nil, nil, err
	}
	h := &arrayHeader{descr: descr, fortran: fortran, shape: shape, order: binary.LittleEndian}
	switch len(shape) {
	case 1:
		h.rows, h.cols = 1, shape[0]
	case 2:
		h.rows, h.cols = shape[0], shape[1]
	default:
		return nil, nil, fmt.Errorf("npy: %d-D array, want a 2-D matrix", len(shape))
	}
	if strings.HasPrefix(descr, ">") {
		h.order = binary.BigEndian
	}
	h.size = map[string]int{"f4": 4, "f8": 8}[strings.TrimLeft(descr, "<>|=")]
	if h.size == 0 {
		return nil, nil, fmt.Errorf("npy: dtype %q, want float32 or float64 ('<f4', '<f8')", descr)
	}
	n, ok := bounded.Product(h.rows, h.cols, h.size)
	if !ok || n/h.size > MaxElements {
		return nil, nil, fmt.Errorf("npy: shape %s has more than %d elements (the limit)", shapeString(shape), MaxElements)
	}
	if left := avail - int64(len(pre)+lenField+hlen); known && left < int64(n) {
		return nil, nil, fmt.Errorf("npy: shape %s of %s needs %d bytes of data, the file holds %d", shapeString(shape), descr, n, max(left, 0))
	}
	h.bytes = n
	return h, br, nil
}

var (
	reDescr   = regexp.MustCompile(`'descr'\s*:\s*'([^']*)'`)
	reFortran = regexp.MustCompile(`'fortran_order'\s*:\s*(True|False)`)
	reShape   = regexp.MustCompile(`'shape'\s*:\s*\(([^)]*)\)`)
)

func parseHeader(h string) (descr string, fortran bool, shape []int, err error) {
	d, f, s := reDescr.FindStringSubmatch(h), reFortran.FindStringSubmatch(h), reShape.FindStringSubmatch(h)
	if d == nil || f == nil || s == nil {
		return "", false, nil, fmt.Errorf("npy: malformed header %q", strings.TrimSpace(h))
	}
	for _, p := range strings.Split(s[1], ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 {
			return "", false, nil, fmt.Errorf("npy: bad shape %q", s[1])
		}
		shape = append(shape, v)
	}
	return d[1], f[1] == "True", shape, nil
}

// ReadFile reads a matrix from an .npy file.
func ReadFile(path string) (rows, cols int, data []float64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, nil, err
	}
	defer f.Close()
	rows, cols, data, err = Read(f)
	if err != nil {
		return 0, 0, nil, fmt.Errorf("%s: %w", path, err)
	}
	return rows, cols, data, nil
}

// header returns a version 1.0 header for a C-order 2-D array of descr,
// padded with spaces and a newline so the data starts at a multiple of 64.
func header(descr string, rows, cols int) []byte {
	h := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (%d, %d), }", descr, rows, cols)
	total := len(magic) + 2 + 2 + len(h) + 1
	h += strings.Repeat(" ", (64-total%64)%64) + "\n"
	var buf bytes.Buffer
	buf.Write(magic)
	buf.Write([]byte{1, 0})
	binary.Write(&buf, binary.LittleEndian, uint16(len(h)))
	buf.WriteString(h)
	return buf.Bytes()
}

// Write encodes a rows×cols float64 matrix (row-major) as .npy version 1.0.
func Write(w io.Writer, rows, cols int, data []float64) error {
	if len(data) != rows*cols {
		return fmt.Errorf("npy: %d values for shape (%d, %d)", len(data), rows, cols)
	}
	if _, err := w.Write(header("<f8", rows, cols)); err != nil {
		return err
	}
	raw := make([]byte, 8*len(data))
	for i, v := range data {
		binary.LittleEndian.PutUint64(raw[i*8:], math.Float64bits(v))
	}
	_, err := w.Write(raw)
	return err
}

// WriteFloat32 encodes a rows×cols float32 matrix (row-major) as .npy
// version 1.0 ('<f4'), streaming the data in blocks.
func WriteFloat32(w io.Writer, rows, cols int, data []float32) error {
	if len(data) != rows*cols {
		return fmt.Errorf("npy: %d values for shape (%d, %d)", len(data), rows, cols)
	}
	if _, err := w.Write(header("<f4", rows, cols)); err != nil {
		return err
	}
	buf := make([]byte, 0, 64<<10)
	for _, v := range data {
		buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
		if len(buf) == cap(buf) {
			if _, err := w.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	_, err := w.Write(buf)
	return err
}

// WriteFile writes a float64 matrix so a crash leaves the old or the new file.
func WriteFile(path string, rows, cols int, data []float64) error {
	_, err := atomicfile.Write(path, 0o644, func(w io.Writer) error { return Write(w, rows, cols, data) })
	return err
}

// WriteFileFloat32 writes a float32 matrix ('<f4') so a crash leaves the
// old or the new file.
func WriteFileFloat32(path string, rows, cols int, data []float32) error {
	_, err := atomicfile.Write(path, 0o644, func(w io.Writer) error { return WriteFloat32(w, rows, cols, data) })
	return err
}
