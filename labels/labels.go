package labels

import (
	"bufio"
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/lcl-project/lcl/internal/bounded"
	"github.com/lcl-project/lcl/internal/suggest"
)

//go:embed data
var dataFS embed.FS

// Class is one class of a label set, at its index in the dataset's order.
type Class struct {
	Index int
	ID    string // stable identifier: the wnid for ImageNet, the dataset's own name or id otherwise
	Name  string // human-readable name
	WNID  string // WordNet 3.0 noun synset, "" where the dataset has none (CUB, NABirds)
	Lemma string // the lemma the reviewed mapping used, where one was reviewed
}

// Attributes is a class × attribute matrix (AwA2's 85 predicates, CUB's 312
// attributes). Missing values (AwA2's −1 marker) are NaN.
type Attributes struct {
	Names  []string
	Values [][]float64 // one row per class, in class order
}

// Coarse groups fine classes into superclasses (CIFAR-100's 20).
type Coarse struct {
	Names []string
	Of    []int // Of[fine class index] = coarse index
}

// Node is one node of a label hierarchy.
type Node struct {
	ID     string
	Name   string
	Parent string // "" for the root
}

// Set is a named, ordered list of classes with optional side information.
type Set struct {
	Name    string
	Classes []Class

	Coarse     *Coarse
	Attributes map[string]*Attributes // e.g. "continuous", "binary"
	Hierarchy  []Node                 // every node of the label tree, classes are its leaves

	// wordnetNames marks a set whose class names come from WordNet
	// (imagenet21k ships only wnids): Check names its classes.
	wordnetNames bool
}

// Len is the number of classes.
func (s *Set) Len() int { return len(s.Classes) }

// WNIDs returns the classes' wnids in class order ("" where unmapped).
func (s *Set) WNIDs() []string {
	out := make([]string, len(s.Classes))
	for i, c := range s.Classes {
		out[i] = c.WNID
	}
	return out
}

// builtins maps each built-in name to its loader.
var builtins = map[string]func() (*Set, error){
	"imagenet":      loadImageNet,
	"imagenet21k":   loadImageNet21k,
	"cifar100":      loadCIFAR100,
	"awa2":          loadAwA2,
	"cub200":        loadCUB200,
	"nabirds":       loadNABirds,
	"fashion-mnist": loadFashionMNIST,
	"quickdraw":     loadQuickDraw,
}

// Names lists the built-in label sets.
func Names() []string {
	out := make([]string, 0, len(builtins))
	for n := range builtins {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// ErrUnknownSet is returned when a name is neither built in nor a file.
var ErrUnknownSet = errors.New("unknown label set")

// Builtin returns a built-in label set by name.
func Builtin(name string) (*Set, error) {
	load, ok := builtins[strings.ToLower(name)]
	if !ok {
		return nil, fmt.Errorf("%w %q (built-in sets: %s)", ErrUnknownSet, name, strings.Join(Names(), ", "))
	}
	s, err := load()
	if err != nil {
		return nil, fmt.Errorf("label set %s: %w", name, err)
	}
	return s, nil
}

// Load resolves a --synsets value: a built-in name, else a file path (see
// ParseFile).
func Load(spec string) (*Set, error) {
	if _, ok := builtins[strings.ToLower(spec)]; ok {
		return Builtin(spec)
	}
	if _, err := os.Stat(spec); err != nil {
		return nil, fmt.Errorf("%w %q: not a built-in set (%s) and not a readable file%s", ErrUnknownSet, spec, strings.Join(Names(), ", "),
			suggest.DidYouMean(spec, Names()))
	}
	return ParseFile(spec)
}

// ParseFile reads a user label file: one class per line, either a wnid
// ("n02119789") or "name<TAB>wnid". Blank lines and lines starting with '#'
// are ignored. The set is named after the file.
func ParseFile(path string) (*Set, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s, err := Parse(f, path)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Parse reads the label file format of ParseFile from r; name is used for the
// set's name and in errors.
func Parse(r io.Reader, name string) (*Set, error) {
	s := &Set{Name: name}
	sc := bounded.NewScanner(r, 1<<20)
	seen := map[string]int{}
	for sc.Scan() {
		line := sc.Line()
		text := sc.Text()
		if strings.TrimSpace(text) == "" || strings.HasPrefix(strings.TrimSpace(text), "#") {
			continue
		}
		var cname, wnid string
		if n, w, ok := strings.Cut(text, "\t"); ok {
			cname, wnid = strings.TrimSpace(n), strings.TrimSpace(w)
		} else {
			wnid = strings.TrimSpace(text)
		}
		if !validWNID(wnid) {
			return nil, fmt.Errorf("%s:%d: %q is not a wnid (expected n followed by 8 digits, e.g. n02119789; lines are WNID or NAME<TAB>WNID)", name, line, wnid)
		}
		if prev, dup := seen[wnid]; dup {
			return nil, fmt.Errorf("%s:%d: wnid %s repeats line %d", name, line, wnid, prev)
		}
		seen[wnid] = line
		if cname == "" {
			cname = wnid
		}
		s.Classes = append(s.Classes, Class{Index: len(s.Classes), ID: wnid, Name: cname, WNID: wnid})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(s.Classes) == 0 {
		return nil, fmt.Errorf("%s: no classes (expected one wnid or NAME<TAB>WNID per line)", name)
	}
	return s, nil
}

func validWNID(s string) bool {
	if len(s) != 9 || s[0] != 'n' {
		return false
	}
	_, err := strconv.ParseUint(s[1:], 10, 32)
	return err == nil
}

// SynsetChecker is what Check needs of a WordNet database.
type SynsetChecker interface {
	HasSynset(wnid string) bool
}

// SynsetNamer is what Check needs of a WordNet database to name the classes
// of a set that ships only wnids: a synset's first lemma as stored
// ("kit_fox"); false when wnid names no synset.
type SynsetNamer interface {
	FirstLemma(wnid string) (string, bool)
}

// Check verifies that every mapped wnid names a WordNet noun synset. For a
// user file the error names the line (lines are counted from the class
// index, so blank and comment lines shift them; the message says so).
// A built-in set that ships only wnids (imagenet21k) is named from WordNet
// when wn is also a SynsetNamer: each class's Lemma becomes its synset's
// first lemma and its Name that lemma with spaces for underscores (until
// then both are the wnid and "").
func (s *Set) Check(wn SynsetChecker) error {
	for _, c := range s.Classes {
		if c.WNID == "" || wn.HasSynset(c.WNID) {
			continue
		}
		return fmt.Errorf("%s: class %d (%s): wnid %s is not a WordNet 3.0 noun synset (no synset at offset %s of data.noun)", s.locate(c), c.Index, c.Name, c.WNID, c.WNID[1:])
	}
	if namer, ok := wn.(SynsetNamer); ok && s.wordnetNames {
		for i := range s.Classes {
			c := &s.Classes[i]
			if lemma, ok := namer.FirstLemma(c.WNID); ok {
				c.Lemma, c.Name = lemma, strings.ReplaceAll(lemma, "_", " ")
			}
		}
		s.wordnetNames = false
	}
	return nil
}

// locate names where a class came from for errors: "file:line" for user
// files, the set name otherwise.
func (s *Set) locate(c Class) string {
	if _, builtin := builtins[s.Name]; builtin {
		return "label set " + s.Name
	}
	if line, err := lineOf(s.Name, c.WNID); err == nil {
		return fmt.Sprintf("%s:%d", s.Name, line)
	}
	return s.Name
}

func lineOf(path, wnid string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for i, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, wnid) {
			return i + 1, nil
		}
	}
	return 0, fmt.Errorf("%s not in %s", wnid, path)
}

// --- built-in loaders ---

func readLines(path string) ([]string, error) {
	b, err := dataFS.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range strings.Split(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out, nil
}

func loadImageNet() (*Set, error) {
	lines, err := readLines("data/imagenet/LOC_synset_mapping.txt")
	if err != nil {
		return nil, err
	}
	s := &Set{Name: "imagenet"}
	for i, l := range lines {
		wnid, names, ok := strings.Cut(l, " : ")
		if !ok || !validWNID(wnid) {
			return nil, fmt.Errorf("LOC_synset_mapping.txt:%d: expected 'wnid : names'", i+1)
		}
		first, _, _ := strings.Cut(names, ",")
		s.Classes = append(s.Classes, Class{Index: i, ID: wnid, Name: strings.TrimSpace(first), WNID: wnid, Lemma: strings.TrimSpace(first)})
	}
	return s, nil
}

// loadImageNet21k reads the 21,843 wnids of the ImageNet-21k release
// (fall 2011, as Google and timm use it) in its class-index order. The list
// has no names: a class is named by its wnid until Check names it from
// WordNet.
func loadImageNet21k() (*Set, error) {
	lines, err := readLines("data/imagenet21k/imagenet21k_goog_synsets.txt")
	if err != nil {
		return nil, err
	}
	s := &Set{Name: "imagenet21k", Classes: make([]Class, 0, len(lines)), wordnetNames: true}
	seen := make(map[string]int, len(lines))
	for i, l := range lines {
		wnid := strings.TrimSpace(l)
		if !validWNID(wnid) {
			return nil, fmt.Errorf("imagenet21k_goog_synsets.txt:%d: %q is not a wnid", i+1, wnid)
		}
		if prev, dup := seen[wnid]; dup {
			return nil, fmt.Errorf("imagenet21k_goog_synsets.txt:%d: wnid %s repeats line %d", i+1, wnid, prev)
		}
		seen[wnid] = i + 1
		s.Classes = append(s.Classes, Class{Index: i, ID: wnid, Name: wnid, WNID: wnid})
	}
	return s, nil
}

// applyMapping fills WNID and Lemma from a reviewed mapping file:
// index<TAB>name<TAB>wnid<TAB>lemma<TAB>note, '#' comments.
func applyMapping(s *Set, file string) error {
	lines, err := readLines("data/" + file)
	if err != nil {
		return fmt.Errorf("reviewed WordNet mapping: %w", err)
	}
	n := 0
	for i, l := range lines {
		if strings.HasPrefix(l, "#") {
			continue
		}
		f := strings.Split(l, "\t")
		if len(f) < 4 {
			return fmt.Errorf("%s:%d: expected index, name, wnid, lemma, note separated by tabs", file, i+1)
		}
		idx, err := strconv.Atoi(f[0])
		if err != nil || idx < 0 || idx >= len(s.Classes) {
			return fmt.Errorf("%s:%d: index %q out of range 0..%d", file, i+1, f[0], len(s.Classes)-1)
		}
		if f[1] != s.Classes[idx].ID {
			return fmt.Errorf("%s:%d: class %d is %q in the dataset, the mapping says %q", file, i+1, idx, s.Classes[idx].ID, f[1])
		}
		if !validWNID(f[2]) {
			return fmt.Errorf("%s:%d: %q is not a wnid", file, i+1, f[2])
		}
		s.Classes[idx].WNID, s.Classes[idx].Lemma = f[2], f[3]
		n++
	}
	if n != len(s.Classes) {
		return fmt.Errorf("%s maps %d of %d classes", file, n, len(s.Classes))
	}
	return nil
}

func loadCIFAR100() (*Set, error) {
	fine, err := readLines("data/cifar100/fine_label_names.txt")
	if err != nil {
		return nil, err
	}
	coarse, err := readLines("data/cifar100/coarse_label_names.txt")
	if err != nil {
		return nil, err
	}
	raw, err := dataFS.ReadFile("data/cifar100/coarse_to_fine_mapping.json")
	if err != nil {
		return nil, err
	}
	var m map[string][]string
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("coarse_to_fine_mapping.json: %w", err)
	}
	s := &Set{Name: "cifar100", Coarse: &Coarse{Names: coarse, Of: make([]int, len(fine))}}
	byName := map[string]int{}
	for i, n := range fine {
		n = strings.TrimSpace(n)
		byName[n] = i
		s.Classes = append(s.Classes, Class{Index: i, ID: n, Name: strings.ReplaceAll(n, "_", " ")})
		s.Coarse.Of[i] = -1
	}
	for ci, cn := range coarse {
		for _, f := range m[strings.TrimSpace(cn)] {
			fi, ok := byName[f]
			if !ok {
				return nil, fmt.Errorf("coarse_to_fine_mapping.json: %q under %q is not a fine class", f, cn)
			}
			s.Coarse.Of[fi] = ci
		}
	}
	for i, c := range s.Coarse.Of {
		if c < 0 {
			return nil, fmt.Errorf("coarse_to_fine_mapping.json: fine class %q has no coarse class", fine[i])
		}
	}
	return s, applyMapping(s, "cifar100-wordnet.tsv")
}

// idNameLines parses "<id><sep><name>" lines.
func idNameLines(path string, sep string) ([][2]string, error) {
	lines, err := readLines(path)
	if err != nil {
		return nil, err
	}
	out := make([][2]string, len(lines))
	for i, l := range lines {
		id, name, ok := strings.Cut(strings.TrimSpace(l), sep)
		if !ok {
			return nil, fmt.Errorf("%s:%d: expected '<id>%s<name>'", path, i+1, sep)
		}
		out[i] = [2]string{strings.TrimSpace(id), strings.TrimSpace(name)}
	}
	return out, nil
}

// readMatrix reads whitespace-separated rows; missing marks the value that
// means "missing" (mapped to NaN), or NaN for none.
func readMatrix(path string, rows, cols int, missing float64) ([][]float64, error) {
	b, err := dataFS.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out [][]float64
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<16), 1<<22)
	for line := 1; sc.Scan(); line++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) != cols {
			return nil, fmt.Errorf("%s:%d: %d values, want %d", path, line, len(f), cols)
		}
		row := make([]float64, cols)
		for j, v := range f {
			x, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: column %d: %w", path, line, j+1, err)
			}
			if x == missing {
				x = math.NaN()
			}
			row[j] = x
		}
		out = append(out, row)
	}
	if len(out) != rows {
		return nil, fmt.Errorf("%s: %d rows, want %d", path, len(out), rows)
	}
	return out, sc.Err()
}

func loadAwA2() (*Set, error) {
	cls, err := idNameLines("data/awa2/classes.txt", "\t")
	if err != nil {
		return nil, err
	}
	preds, err := idNameLines("data/awa2/predicates.txt", "\t")
	if err != nil {
		return nil, err
	}
	s := &Set{Name: "awa2", Attributes: map[string]*Attributes{}}
	for i, c := range cls {
		s.Classes = append(s.Classes, Class{Index: i, ID: c[1], Name: strings.ReplaceAll(c[1], "+", " ")})
	}
	names := make([]string, len(preds))
	for i, p := range preds {
		names[i] = p[1]
	}
	cont, err := readMatrix("data/awa2/predicate-matrix-continuous.txt", len(cls), len(names), -1)
	if err != nil {
		return nil, err
	}
	bin, err := readMatrix("data/awa2/predicate-matrix-binary.txt", len(cls), len(names), math.NaN())
	if err != nil {
		return nil, err
	}
	s.Attributes["continuous"] = &Attributes{Names: names, Values: cont}
	s.Attributes["binary"] = &Attributes{Names: names, Values: bin}
	return s, applyMapping(s, "awa2-wordnet.tsv")
}

func loadCUB200() (*Set, error) {
	cls, err := idNameLines("data/cub200/classes.txt", " ")
	if err != nil {
		return nil, err
	}
	attrs, err := idNameLines("data/cub200/attributes.txt", " ")
	if err != nil {
		return nil, err
	}
	s := &Set{Name: "cub200", Attributes: map[string]*Attributes{}}
	for i, c := range cls {
		_, name, _ := strings.Cut(c[1], ".")
		s.Classes = append(s.Classes, Class{Index: i, ID: c[1], Name: strings.ReplaceAll(name, "_", " ")})
	}
	names := make([]string, len(attrs))
	for i, a := range attrs {
		names[i] = a[1]
	}
	cont, err := readMatrix("data/cub200/class_attribute_labels_continuous.txt", len(cls), len(names), math.NaN())
	if err != nil {
		return nil, err
	}
	s.Attributes["continuous"] = &Attributes{Names: names, Values: cont}
	return s, nil
}

func loadNABirds() (*Set, error) {
	cls, err := idNameLines("data/nabirds/classes.txt", " ")
	if err != nil {
		return nil, err
	}
	edges, err := idNameLines("data/nabirds/hierarchy.txt", " ")
	if err != nil {
		return nil, err
	}
	parent := map[string]string{}
	hasChild := map[string]bool{}
	for _, e := range edges {
		parent[e[0]] = e[1]
		hasChild[e[1]] = true
	}
	s := &Set{Name: "nabirds"}
	type leaf struct {
		id   int
		name string
	}
	var leaves []leaf
	for _, c := range cls {
		s.Hierarchy = append(s.Hierarchy, Node{ID: c[0], Name: c[1], Parent: parent[c[0]]})
		if !hasChild[c[0]] {
			id, err := strconv.Atoi(c[0])
			if err != nil {
				return nil, fmt.Errorf("nabirds classes.txt: id %q is not a number", c[0])
			}
			leaves = append(leaves, leaf{id, c[1]})
		}
	}
	// The dataset's class order is ascending class id over the leaves.
	sort.Slice(leaves, func(i, j int) bool { return leaves[i].id < leaves[j].id })
	for i, l := range leaves {
		s.Classes = append(s.Classes, Class{Index: i, ID: strconv.Itoa(l.id), Name: l.name})
	}
	return s, nil
}

func loadFashionMNIST() (*Set, error) {
	names := []string{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"}
	s := &Set{Name: "fashion-mnist"}
	for i, n := range names {
		s.Classes = append(s.Classes, Class{Index: i, ID: n, Name: n})
	}
	return s, applyMapping(s, "fashion-mnist-wordnet.tsv")
}

// loadQuickDraw reads Quick, Draw!'s 345 category names (class index = line
// number − 1); each class is named and identified by its category name and
// mapped to a reviewed WordNet synset (quickdraw-wordnet.tsv).
func loadQuickDraw() (*Set, error) {
	names, err := readLines("data/quickdraw/categories.txt")
	if err != nil {
		return nil, err
	}
	s := &Set{Name: "quickdraw"}
	for i, n := range names {
		n = strings.TrimSpace(n)
		s.Classes = append(s.Classes, Class{Index: i, ID: n, Name: n})
	}
	return s, applyMapping(s, "quickdraw-wordnet.tsv")
}
