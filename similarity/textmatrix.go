package similarity

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/lcl-project/lcl/internal/bounded"
	"github.com/lcl-project/lcl/internal/npy"
)

// ReadTable reads a numeric table: one row per line, values separated by
// commas, semicolons, tabs or spaces. Blank lines and lines starting with '#'
// are skipped. "nan", "NA" and empty CSV cells are NaN (missing). Every row
// must have as many values as the first; errors name the file and line.
func ReadTable(r io.Reader, name string) ([][]float64, error) {
	sc := bounded.NewScanner(r, 1<<26)
	var rows [][]float64
	for sc.Scan() {
		line := sc.Line()
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
// float64, either byte order, C or Fortran order) or a text table (see
// ReadTable). It returns the row-major values, rounded to float32 as the
// store keeps them, and the side length. An .npy file is read straight into
// the result (a 21,843² float32 matrix costs one copy of itself).
func ReadMatrixFile(path string) ([]float32, int, error) {
	f, isNPY, err := openMatrix(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	if isNPY {
		rows, cols, data, err := npy.Read32(f) // sizes checked against the file's
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %w", path, err)
		}
		return square(data, rows, cols, path)
	}
	raw, err := bounded.ReadFile(path, maxMatrixFileBytes, "matrix file")
	if err != nil {
		return nil, 0, err
	}
	return readMatrix(raw, path)
}

// openMatrix opens a matrix file, only a regular one (a link to /dev/zero
// would be read for ever), and says whether it is an .npy file (by its
// magic bytes); the file is positioned at its start either way.
func openMatrix(path string) (f *os.File, isNPY bool, err error) {
	if f, err = bounded.OpenRegular(path); err != nil {
		return nil, false, err
	}
	var pre [6]byte
	n, _ := io.ReadFull(f, pre[:])
	isNPY = n == len(pre) && bytes.Equal(pre[:], []byte("\x93NUMPY"))
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, false, err
	}
	return f, isNPY, nil
}

// maxMatrixFileBytes bounds a matrix file: more than a float64 matrix of
// 65,536 classes takes.
const maxMatrixFileBytes = 1 << 36

// readMatrix is ReadMatrixFile on the file's bytes; path names it in errors.
func readMatrix(raw []byte, path string) ([]float32, int, error) {
	if bytes.HasPrefix(raw, []byte("\x93NUMPY")) {
		rows, cols, data, err := npy.Read32(bytes.NewReader(raw))
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %w", path, err)
		}
		return square(data, rows, cols, path)
	}
	t, err := ReadTable(bytes.NewReader(raw), path)
	if err != nil {
		return nil, 0, err
	}
	rows, cols := len(t), len(t[0])
	data := make([]float32, 0, rows*cols)
	for _, r := range t {
		for _, x := range r {
			data = append(data, float32(x))
		}
	}
	return square(data, rows, cols, path)
}

func square(data []float32, rows, cols int, path string) ([]float32, int, error) {
	if rows != cols {
		return nil, 0, fmt.Errorf("%s: matrix is %d×%d, not square", path, rows, cols)
	}
	return data, rows, nil
}

var csvSep = regexp.MustCompile(`[,;]`)
