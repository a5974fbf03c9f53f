package similarity

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
)

// ReadTable reads a numeric table: one row per line, values separated by
// commas, semicolons, tabs or spaces. Blank lines and lines starting with '#'
// are skipped. "nan", "NA" and empty CSV cells are NaN (missing). Every row
// must have as many values as the first; errors name the file and line.
func ReadTable(r io.Reader, name string) ([][]float64, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<26)
	var rows [][]float64
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(strings.TrimPrefix(sc.Text(), "\ufeff"))
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		var fields []string
		if strings.ContainsAny(text, ",;") {
			fields = csvSep.Split(text, -1) // empty cells stay (as missing)
		} else {
			fields = strings.Fields(text)
		}
		row := make([]float64, len(fields))
		for j, f := range fields {
			f = strings.TrimSpace(f)
			switch strings.ToLower(f) {
			case "", "nan", "na":
				row[j] = math.NaN()
				continue
			}
			x, err := strconv.ParseFloat(f, 64)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: column %d: %q is not a number", name, line, j+1, f)
			}
			row[j] = x
		}
		if len(rows) > 0 && len(row) != len(rows[0]) {
			return nil, fmt.Errorf("%s:%d: row %d has %d values, want %d like the first row", name, line, len(rows)+1, len(row), len(rows[0]))
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: no rows", name)
	}
	return rows, nil
}

// ReadMatrixFile reads a square matrix from a .npy file (2-D, float32 or
// float64, little-endian, C or Fortran order) or a text table (see
// ReadTable). It returns the row-major values and the side length.
func ReadMatrixFile(path string) ([]float64, int, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, err
	}
	var rows, cols int
	var data []float64
	if bytes.HasPrefix(raw, []byte("\x93NUMPY")) {
		data, rows, cols, err = parseNPY(raw, path)
		if err != nil {
			return nil, 0, err
		}
	} else {
		t, err := ReadTable(bytes.NewReader(raw), path)
		if err != nil {
			return nil, 0, err
		}
		rows, cols = len(t), len(t[0])
		data = make([]float64, 0, rows*cols)
		for _, r := range t {
			data = append(data, r...)
		}
	}
	if rows != cols {
		return nil, 0, fmt.Errorf("%s: matrix is %d×%d, not square", path, rows, cols)
	}
	return data, rows, nil
}

var (
	csvSep     = regexp.MustCompile(`[,;]`)
	npyDescr   = regexp.MustCompile(`'descr':\s*'([^']*)'`)
	npyFortran = regexp.MustCompile(`'fortran_order':\s*(True|False)`)
	npyShape   = regexp.MustCompile(`'shape':\s*\(([^)]*)\)`)
)

func parseNPY(raw []byte, name string) ([]float64, int, int, error) {
	if len(raw) < 10 {
		return nil, 0, 0, fmt.Errorf("%s: truncated .npy header", name)
	}
	major := raw[6]
	var hlen, off int
	switch major {
	case 1:
		hlen, off = int(binary.LittleEndian.Uint16(raw[8:10])), 10
	case 2, 3:
		if len(raw) < 12 {
			return nil, 0, 0, fmt.Errorf("%s: truncated .npy header", name)
		}
		hlen, off = int(binary.LittleEndian.Uint32(raw[8:12])), 12
	default:
		return nil, 0, 0, fmt.Errorf("%s: .npy format version %d is not supported", name, major)
	}
	if off+hlen > len(raw) {
		return nil, 0, 0, fmt.Errorf("%s: truncated .npy header", name)
	}
	hdr := string(raw[off : off+hlen])
	body := raw[off+hlen:]
	d := npyDescr.FindStringSubmatch(hdr)
	fo := npyFortran.FindStringSubmatch(hdr)
	sh := npyShape.FindStringSubmatch(hdr)
	if d == nil || fo == nil || sh == nil {
		return nil, 0, 0, fmt.Errorf("%s: .npy header %q lacks descr, fortran_order or shape", name, hdr)
	}
	var dims []int
	for _, s := range strings.Split(sh[1], ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			return nil, 0, 0, fmt.Errorf("%s: .npy shape %q: %w", name, sh[1], err)
		}
		dims = append(dims, n)
	}
	if len(dims) != 2 {
		return nil, 0, 0, fmt.Errorf("%s: .npy array has shape (%s), want a 2-D matrix", name, sh[1])
	}
	rows, cols := dims[0], dims[1]
	var size int
	switch d[1] {
	case "<f8", "=f8":
		size = 8
	case "<f4", "=f4":
		size = 4
	default:
		return nil, 0, 0, fmt.Errorf("%s: .npy dtype %s is not supported (want little-endian float32 <f4 or float64 <f8)", name, d[1])
	}
	if len(body) != rows*cols*size {
		return nil, 0, 0, fmt.Errorf("%s: .npy body has %d bytes, want %d for %d×%d %s", name, len(body), rows*cols*size, rows, cols, d[1])
	}
	data := make([]float64, rows*cols)
	for k := range data {
		var x float64
		if size == 8 {
			x = math.Float64frombits(binary.LittleEndian.Uint64(body[k*8:]))
		} else {
			x = float64(math.Float32frombits(binary.LittleEndian.Uint32(body[k*4:])))
		}
		if fo[1] == "True" { // column-major: element k is (k%rows, k/rows)
			data[(k%rows)*cols+k/rows] = x
		} else {
			data[k] = x
		}
	}
	return data, rows, cols, nil
}

// WriteNPY writes a row-major n×n float64 matrix as a .npy file.
func WriteNPY(w io.Writer, data []float64, n int) error {
	hdr := fmt.Sprintf("{'descr': '<f8', 'fortran_order': False, 'shape': (%d, %d), }", n, n)
	pad := 64 - (10+len(hdr)+1)%64
	hdr += strings.Repeat(" ", pad%64) + "\n"
	var b bytes.Buffer
	b.WriteString("\x93NUMPY\x01\x00")
	binary.Write(&b, binary.LittleEndian, uint16(len(hdr)))
	b.WriteString(hdr)
	for _, x := range data {
		binary.Write(&b, binary.LittleEndian, x)
	}
	_, err := w.Write(b.Bytes())
	return err
}
