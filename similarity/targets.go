package similarity

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/lcl-project/lcl/internal/bounded"
	"github.com/lcl-project/lcl/internal/npy"
	"github.com/lcl-project/lcl/labels"
)

// TargetOptions say what ReadTargets checks a target matrix against.
type TargetOptions struct {
	// Set, when given, names the classes: a header row, row labels or an
	// .npy file's FILE.ids.txt must name them in its class order (by id or
	// by name), and errors name the class of a row.
	Set *labels.Set
	// Classes is the run's class count C (0: the file's size, whatever it is).
	Classes int
	// Tolerance is how far a row's sum may be from 1; Normalize waives
	// that check (every row then only needs a positive sum).
	Tolerance float64
	Normalize bool
}

// ReadTargets reads a C×C target matrix, row y the target distribution of
// an example of class y, from a text table or an .npy file, and checks it
// before anything uses it: C×C for the run's classes, every value finite
// and ≥ 0, every row summing to 1 within o.Tolerance (or, with
// o.Normalize, to more than 0). It returns the values as the file gives
// them, row-major, and C. Every error is one line naming the file, the
// line (of a text file) or the row, and the reason.
//
// A text table has one row per line, values separated by commas, tabs,
// semicolons or spaces ('#' lines and blank lines skipped). It may begin
// with a header of the C class names or ids, after an optional corner
// cell, and each row may begin with its class's name or id: so `lcl store
// export KEY --format csv` output ("class,ID1,…" then "ID,values") reads
// as it is. An .npy file (2-D float32 or float64, as `lcl store export
// --format npy` and `lcl plan` write) is checked against FILE.ids.txt
// beside FILE.npy when that exists: the ids file `lcl store export -o
// FILE.npy` writes.
func ReadTargets(path string, o TargetOptions) ([]float32, int, error) {
	f, isNPY, err := openMatrix(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	if isNPY {
		return readTargetsNPY(f, path, o)
	}
	t := &targetTable{path: bounded.Quote(path), o: o}
	if err := t.read(f); err != nil {
		return nil, 0, err
	}
	return t.data, t.c, nil
}

func readTargetsNPY(f *os.File, path string, o TargetOptions) ([]float32, int, error) {
	name := bounded.Quote(path)
	rows, cols, data, err := npy.Read32(f)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", name, err)
	}
	if rows != cols {
		return nil, 0, fmt.Errorf("%s: matrix is %d×%d, not square (row y is the target of class y)", name, rows, cols)
	}
	if why := sizeProblem(rows, o); why != "" {
		return nil, 0, fmt.Errorf("%s: matrix is %d×%d but %s", name, rows, cols, why)
	}
	if err := checkTargetIDs(targetIDsPath(path), o.Set); err != nil {
		return nil, 0, err
	}
	for i := 0; i < rows; i++ {
		if err := checkTargetRow(data[i*cols:(i+1)*cols], i, o); err != nil {
			return nil, 0, fmt.Errorf("%s: row %d%s", name, i, err)
		}
	}
	return data, rows, nil
}

// targetIDsPath is the ids file checked beside the .npy target matrix
// path: FILE.ids.txt for FILE.npy, the name `lcl store export -o FILE.npy`
// gives it (and the Python package's load_matrix reads).
func targetIDsPath(path string) string {
	return strings.TrimSuffix(path, filepath.Ext(path)) + ".ids.txt"
}

// checkTargetIDs checks the ids file `lcl store export -o FILE.npy` writes
// beside the matrix (one id per line) against the label set, when both exist.
func checkTargetIDs(path string, set *labels.Set) error {
	if set == nil {
		return nil
	}
	raw, err := bounded.ReadFile(path, 1<<26, "ids file")
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	// One id per line, as lcl store export writes them: an id may hold a
	// space (Fashion-MNIST's "Ankle boot").
	ids := strings.Split(strings.TrimRight(strings.ReplaceAll(string(raw), "\r\n", "\n"), "\n"), "\n")
	if len(ids) != set.Len() {
		return fmt.Errorf("%s: %d ids, label set %s has %d classes", bounded.Quote(path), len(ids), set.Name, set.Len())
	}
	for i, id := range ids {
		if !isClass(set, i, id) {
			return fmt.Errorf("%s:%d: id %q is not class %d of %s (%s)", bounded.Quote(path), i+1, bounded.Line(id), i, set.Name, className(set, i))
		}
	}
	return nil
}

// sizeProblem says why C classes do not fit the run ("" when they do).
func sizeProblem(c int, o TargetOptions) string {
	switch {
	case o.Set != nil && c != o.Set.Len():
		return fmt.Sprintf("label set %s has %d classes", o.Set.Name, o.Set.Len())
	case o.Classes > 0 && c != o.Classes:
		return fmt.Sprintf("the run has %d classes", o.Classes)
	}
	return ""
}

// checkTargetRow checks row i of a target matrix; its error continues
// "…: row I" (the class, then the reason).
func checkTargetRow(row []float32, i int, o TargetOptions) error {
	cls := ""
	if o.Set != nil {
		cls = " (" + className(o.Set, i) + ")"
	}
	sum := 0.0
	for j, v := range row {
		switch {
		case math.IsNaN(float64(v)) || math.IsInf(float64(v), 0):
			return fmt.Errorf("%s, column %d: %v is not finite", cls, j, v)
		case v < 0:
			return fmt.Errorf("%s, column %d: %v is negative (targets are probabilities)", cls, j, v)
		}
		sum += float64(v)
	}
	switch {
	case sum <= 0:
		return fmt.Errorf("%s sums to 0: no target distribution", cls)
	case !o.Normalize && math.Abs(sum-1) > o.Tolerance:
		return fmt.Errorf("%s sums to %.6g, want 1 within %g (or --param normalize=true to divide each row by its sum)", cls, sum, o.Tolerance)
	}
	return nil
}

// targetTable reads a text target matrix line by line.
type targetTable struct {
	path   string // quoted for messages
	o      TargetOptions
	c      int  // columns of values (C), from the header or the first row
	labels bool // rows begin with their class
	header bool
	data   []float32
	rows   int
}

func (t *targetTable) read(r io.Reader) error {
	sc := bounded.NewScanner(r, 1<<28)
	last := 0
	for sc.Scan() {
		text := strings.TrimSpace(strings.TrimPrefix(sc.Text(), "\ufeff"))
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		last = sc.Line()
		fields, err := splitTargetFields(text)
		if err != nil {
			return fmt.Errorf("%s:%d: %v", t.path, last, err)
		}
		if err := t.line(fields); err != nil {
			return fmt.Errorf("%s:%d: %w", t.path, last, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", t.path, err)
	}
	if t.c == 0 {
		return fmt.Errorf("%s: no rows", t.path)
	}
	if t.rows != t.c {
		return fmt.Errorf("%s:%d: %d rows of %d values: want %d rows, one per class (row y is the target of class y)", t.path, last, t.rows, t.c, t.c)
	}
	return nil
}

// line takes one non-blank line: the header, or a row of values.
func (t *targetTable) line(fields []string) error {
	if t.c == 0 && !t.header && isHeader(fields) {
		return t.readHeader(fields)
	}
	if t.c == 0 {
		// The first row says the width: a leading cell that is no number
		// is its class.
		t.labels = !numeric(fields[0])
		t.c = len(fields)
		if t.labels {
			t.c--
		}
		if why := sizeProblem(t.c, t.o); why != "" {
			return fmt.Errorf("the first row has %d values but %s", t.c, why)
		}
	}
	want := t.c
	if t.labels {
		want++
	}
	if len(fields) != want {
		return fmt.Errorf("%d cells, want %d like the first row", len(fields), want)
	}
	if t.rows == t.c {
		return fmt.Errorf("more than %d rows (one per class)", t.c)
	}
	i := t.rows
	if t.labels {
		if t.o.Set != nil && !isClass(t.o.Set, i, fields[0]) {
			return fmt.Errorf("row %d is labelled %q, but class %d is %s", i, bounded.Line(fields[0]), i, className(t.o.Set, i))
		}
		fields = fields[1:]
	}
	row := make([]float32, t.c)
	for j, f := range fields {
		x, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return fmt.Errorf("row %d, column %d: %q is not a number", i, j, bounded.Line(f))
		}
		row[j] = float32(x)
	}
	if err := checkTargetRow(row, i, t.o); err != nil {
		return fmt.Errorf("row %d%w", i, err)
	}
	t.data = append(t.data, row...)
	t.rows++
	return nil
}

// isHeader says whether the first line is a header: a corner cell
// ("class", as lcl store export writes, or empty) before the names, or
// words only past the first cell (which may be a corner of any name). A
// line with a number past its first cell is a row, its words mistakes to
// name (a leading word alone is the row's class).
func isHeader(fields []string) bool {
	corner := strings.TrimSpace(fields[0])
	if len(fields) > 1 && (corner == "" || strings.EqualFold(corner, "class")) {
		return true
	}
	for _, f := range fields[1:] {
		if strings.TrimSpace(f) == "" || numeric(f) {
			return false
		}
	}
	return len(fields) > 1 || !numeric(fields[0])
}

// readHeader takes the header: the C classes' names or ids, after an
// optional corner cell (lcl store export writes "class").
func (t *targetTable) readHeader(fields []string) error {
	t.header = true
	names := fields
	corner := strings.TrimSpace(fields[0])
	if t.o.Set != nil && len(fields) == t.o.Set.Len()+1 || corner == "" || strings.EqualFold(corner, "class") {
		names = fields[1:]
	}
	if why := sizeProblem(len(names), t.o); why != "" {
		return fmt.Errorf("the header names %d classes but %s", len(names), why)
	}
	if t.o.Set != nil {
		for j, n := range names {
			if !isClass(t.o.Set, j, n) {
				return fmt.Errorf("header column %d is %q, but class %d of %s is %s", j, bounded.Line(n), j, t.o.Set.Name, className(t.o.Set, j))
			}
		}
	}
	t.c = len(names)
	t.labels = len(names) < len(fields)
	return nil
}

// splitTargetFields splits a line at commas, else tabs, else semicolons (with
// CSV quoting), else at runs of spaces.
func splitTargetFields(text string) ([]string, error) {
	for _, sep := range []rune{',', '\t', ';'} {
		if strings.ContainsRune(text, sep) {
			r := csv.NewReader(strings.NewReader(text))
			r.Comma, r.LazyQuotes = sep, false
			return r.Read()
		}
	}
	return strings.Fields(text), nil
}

func numeric(s string) bool {
	_, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	return err == nil || errors.Is(err, strconv.ErrRange)
}

// isClass says whether s names class i of set, by id or by name.
func isClass(set *labels.Set, i int, s string) bool {
	s = strings.TrimSpace(s)
	c := set.Classes[i]
	return s == c.ID || s == c.Name
}

func className(set *labels.Set, i int) string {
	c := set.Classes[i]
	if c.Name == c.ID || c.Name == "" {
		return c.ID
	}
	return fmt.Sprintf("%s, %s", c.Name, c.ID)
}
