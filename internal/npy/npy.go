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
	avail, known := bounded.Remaining(r)
	br := bufio.NewReader(r)
	pre := make([]byte, 8)
	if _, err := io.ReadFull(br, pre); err != nil {
		return 0, 0, nil, fmt.Errorf("npy: reading magic: %w", err)
	}
	if !bytes.Equal(pre[:6], magic) {
		return 0, 0, nil, fmt.Errorf("npy: not an .npy file (bad magic)")
	}
	var hlen, lenField int
	switch pre[6] {
	case 1:
		lenField = 2
		var b [2]byte
		if _, err := io.ReadFull(br, b[:]); err != nil {
			return 0, 0, nil, fmt.Errorf("npy: reading header length: %w", err)
		}
		hlen = int(binary.LittleEndian.Uint16(b[:]))
	case 2, 3:
		lenField = 4
		var b [4]byte
		if _, err := io.ReadFull(br, b[:]); err != nil {
			return 0, 0, nil, fmt.Errorf("npy: reading header length: %w", err)
		}
		hlen = int(binary.LittleEndian.Uint32(b[:]))
	default:
		return 0, 0, nil, fmt.Errorf("npy: unsupported format version %d.%d", pre[6], pre[7])
	}
	if hlen > 1<<20 || known && int64(8+lenField+hlen) > avail {
		return 0, 0, nil, fmt.Errorf("npy: header of %d bytes is longer than the file or the 1 MiB limit", hlen)
	}
	h := make([]byte, hlen)
	if _, err := io.ReadFull(br, h); err != nil {
		return 0, 0, nil, fmt.Errorf("npy: reading header: %w", err)
	}
	descr, fortran, shape, err := parseHeader(string(h))
	if err != nil {
		return 0, 0, nil, err
	}
	switch len(shape) {
	case 1:
		rows, cols = 1, shape[0]
	case 2:
		rows, cols = shape[0], shape[1]
	default:
		return 0, 0, nil, fmt.Errorf("npy: %d-D array, want a 2-D matrix", len(shape))
	}
	var order binary.ByteOrder = binary.LittleEndian
	if strings.HasPrefix(descr, ">") {
		order = binary.BigEndian
	}
	size := map[string]int{"f4": 4, "f8": 8}[strings.TrimLeft(descr, "<>|=")]
	if size == 0 {
		return 0, 0, nil, fmt.Errorf("npy: dtype %q, want float32 or float64 ('<f4', '<f8')", descr)
	}
	n, ok := bounded.Product(rows, cols, size)
	if !ok || n/size > MaxElements {
		return 0, 0, nil, fmt.Errorf("npy: shape %s has more than %d elements (the limit)", shapeString(shape), MaxElements)
	}
	if left := avail - int64(len(pre)+lenField+hlen); known && left < int64(n) {
		return 0, 0, nil, fmt.Errorf("npy: shape %s of %s needs %d bytes of data, the file holds %d", shapeString(shape), descr, n, max(left, 0))
	}
	raw, err := bounded.ReadFull(br, int64(n))
	if err != nil {
		return 0, 0, nil, fmt.Errorf("npy: shape %s of %s needs %d bytes of data, the file holds %d: %w", shapeString(shape), descr, n, len(raw), err)
	}
	n /= size
	data = make([]float64, n)
	for k := range data {
		var x float64
		if size == 4 {
			x = float64(math.Float32frombits(order.Uint32(raw[k*4:])))
		} else {
			x = math.Float64frombits(order.Uint64(raw[k*8:]))
		}
		if fortran { // column-major: element k is (k%rows, k/rows)
			data[(k%rows)*cols+k/rows] = x
		} else {
			data[k] = x
		}
	}
	return rows, cols, data, nil
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
