package labels

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/wordnet"
)

func TestBuiltinSets(t *testing.T) {
	tests := []struct {
		name    string
		n       int
		first   string
		last    string
		mapped  bool
		attrs   map[string][2]int
		nodes   int
		coarseN int
	}{
		{name: "imagenet", n: 1000, first: "n01440764", last: "n15075141", mapped: true},
		{name: "imagenet21k", n: 21843, first: "n00004475", last: "n15102894", mapped: true},
		{name: "cifar100", n: 100, first: "apple", last: "worm", mapped: true, coarseN: 20},
		{name: "awa2", n: 50, first: "antelope", last: "dolphin", mapped: true, attrs: map[string][2]int{"continuous": {50, 85}, "binary": {50, 85}}},
		{name: "cub200", n: 200, first: "001.Black_footed_Albatross", last: "200.Common_Yellowthroat", attrs: map[string][2]int{"continuous": {200, 312}}},
		{name: "nabirds", n: 555, nodes: 1011},
		{name: "fashion-mnist", n: 10, first: "T-shirt/top", last: "Ankle boot", mapped: true},
		{name: "quickdraw", n: 345, first: "aircraft carrier", last: "zigzag", mapped: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Builtin(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			if s.Len() != tt.n {
				t.Fatalf("%d classes, want %d", s.Len(), tt.n)
			}
			if tt.first != "" && (s.Classes[0].ID != tt.first || s.Classes[tt.n-1].ID != tt.last) {
				t.Errorf("first/last = %q/%q, want %q/%q", s.Classes[0].ID, s.Classes[tt.n-1].ID, tt.first, tt.last)
			}
			for i, c := range s.Classes {
				if c.Index != i {
					t.Fatalf("class %d has Index %d", i, c.Index)
				}
				if tt.mapped && !validWNID(c.WNID) {
					t.Errorf("class %d %q has no wnid", i, c.ID)
				}
			}
			for kind, shape := range tt.attrs {
				a := s.Attributes[kind]
				if a == nil || len(a.Values) != shape[0] || len(a.Names) != shape[1] || len(a.Values[0]) != shape[1] {
					t.Errorf("attributes %s: want %v", kind, shape)
				}
			}
			if len(s.Hierarchy) != tt.nodes {
				t.Errorf("%d hierarchy nodes, want %d", len(s.Hierarchy), tt.nodes)
			}
			if tt.coarseN > 0 && (s.Coarse == nil || len(s.Coarse.Names) != tt.coarseN) {
				t.Errorf("coarse classes missing")
			}
		})
	}
}

func TestCIFAR100FineToCoarseMatchesSources(t *testing.T) {
	s, err := Builtin("cifar100")
	if err != nil {
		t.Fatal(err)
	}
	// The derived map given in shared/data/SOURCES.md.
	want := "4,1,14,8,0,6,7,7,18,3,3,14,9,18,7,11,3,9,7,11,6,11,5,10,7,6,13,15,3,15,0,11,1,10,12,14,16,9,11,5,5,19,8,8,15,13,14,17,18,10,16,4,17,4,2,0,17,4,18,17,10,3,2,12,12,16,12,1,9,19,2,10,0,1,16,12,9,13,15,13,16,19,2,4,6,19,5,5,8,19,18,1,2,15,6,0,17,8,14,13"
	var got []string
	for _, c := range s.Coarse.Of {
		got = append(got, strconv.Itoa(c))
	}
	if strings.Join(got, ",") != want {
		t.Fatalf("fine→coarse = %s\nwant %s", strings.Join(got, ","), want)
	}
}

func TestAwA2MissingValuesAreNaN(t *testing.T) {
	s, err := Builtin("awa2")
	if err != nil {
		t.Fatal(err)
	}
	nan := 0
	for _, row := range s.Attributes["continuous"].Values {
		for _, v := range row {
			if math.IsNaN(v) {
				nan++
			}
		}
	}
	if nan != 4 || !math.IsNaN(s.Attributes["continuous"].Values[0][0]) {
		t.Fatalf("%d NaN cells, want the 4 −1 markers of antelope", nan)
	}
}

func TestNABirdsLeavesAscendingID(t *testing.T) {
	s, err := Builtin("nabirds")
	if err != nil {
		t.Fatal(err)
	}
	parents := map[string]bool{}
	for _, n := range s.Hierarchy {
		parents[n.Parent] = true
	}
	for _, c := range s.Classes {
		if parents[c.ID] {
			t.Fatalf("class %s (%s) is an inner node", c.ID, c.Name)
		}
	}
}

func TestMappedWNIDsResolve(t *testing.T) {
	wn, err := wordnet.Open("")
	if err != nil {
		t.Fatalf("needs WordNet 3.0 (make deps): %v", err)
	}
	for _, name := range []string{"imagenet", "cifar100", "awa2", "fashion-mnist", "quickdraw"} {
		s, err := Builtin(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Check(wn); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		for _, c := range s.Classes {
			syn, err := wn.Synset(c.WNID)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if c.Lemma != "" && !hasLemma(syn, c.Lemma) {
				t.Errorf("%s class %q: lemma %q is not one of %v", name, c.ID, c.Lemma, syn.Lemmas)
			}
		}
	}
}

// mappingRows reads a reviewed mapping file's rows (index, name, wnid, lemma,
// note), header skipped.
func mappingRows(t *testing.T, file string) [][]string {
	t.Helper()
	raw, err := dataFS.ReadFile("data/" + file)
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]string
	for i, l := range strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n") {
		if strings.HasPrefix(l, "#") {
			continue
		}
		f := strings.Split(l, "\t")
		if len(f) != 5 {
			t.Fatalf("%s:%d: %d fields, want 5 (index, name, wnid, lemma, note)", file, i+1, len(f))
		}
		rows = append(rows, f)
	}
	return rows
}

// TestMappingNotes: every row whose lemma is not the class name, or whose
// synset is not the lemma's first sense, says why in its note, and the note
// says "not first sense" exactly when it is not (as check_mappings.py checks).
func TestMappingNotes(t *testing.T) {
	wn, err := wordnet.Open("")
	if err != nil {
		t.Fatalf("needs WordNet 3.0 (make deps): %v", err)
	}
	norm := func(s string) string {
		return strings.ToLower(strings.NewReplacer(" ", "_", "+", "_").Replace(s))
	}
	for _, file := range []string{"cifar100-wordnet.tsv", "awa2-wordnet.tsv", "fashion-mnist-wordnet.tsv", "quickdraw-wordnet.tsv"} {
		for _, r := range mappingRows(t, file) {
			name, wnid, lemma, note := r[1], r[2], r[3], r[4]
			senses, err := wn.Lookup(lemma)
			if err != nil {
				t.Fatal(err)
			}
			sense := 0
			for i, s := range senses {
				if s.ID == wnid {
					sense = i + 1
				}
			}
			if sense == 0 {
				t.Errorf("%s %q: %s is not a sense of %q", file, name, wnid, lemma)
				continue
			}
			if (norm(lemma) != norm(name) || sense > 1) && strings.TrimSpace(note) == "" {
				t.Errorf("%s %q: lemma %q sense %d, but the note is empty", file, name, lemma, sense)
			}
			if (sense > 1) != strings.Contains(note, "not first sense") {
				t.Errorf("%s %q: %s is sense %d of %q; the note must say \"not first sense\" exactly when it is not sense 1: %q", file, name, wnid, sense, lemma, note)
			}
		}
	}
}

// TestQuickDrawMatchesCategories checks, without WordNet, that the quickdraw
// set and its mapping follow categories.txt line by line and that no synset
// is used twice.
func TestQuickDrawMatchesCategories(t *testing.T) {
	raw, err := os.ReadFile("data/quickdraw/categories.txt")
	if err != nil {
		t.Fatal(err)
	}
	cats := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	if len(cats) != 345 {
		t.Fatalf("categories.txt has %d lines, want 345", len(cats))
	}
	s, err := Builtin("quickdraw")
	if err != nil {
		t.Fatal(err)
	}
	rows := mappingRows(t, "quickdraw-wordnet.tsv")
	if s.Len() != len(cats) || len(rows) != len(cats) {
		t.Fatalf("%d classes, %d mapping rows, %d categories", s.Len(), len(rows), len(cats))
	}
	seen := map[string]string{}
	for i, cat := range cats {
		c := s.Classes[i]
		if c.ID != cat || c.Name != cat || rows[i][0] != strconv.Itoa(i) || rows[i][1] != cat {
			t.Errorf("class %d: set %q/%q, mapping row %q %q, want %q", i, c.ID, c.Name, rows[i][0], rows[i][1], cat)
		}
		if c.WNID != rows[i][2] || c.Lemma != rows[i][3] {
			t.Errorf("class %d %q: wnid/lemma %s/%s, the mapping says %s/%s", i, cat, c.WNID, c.Lemma, rows[i][2], rows[i][3])
		}
		if prev, dup := seen[c.WNID]; dup {
			t.Errorf("%s is used by both %q and %q", c.WNID, prev, cat)
		}
		seen[c.WNID] = cat
	}
	if len(seen) != 345 {
		t.Errorf("%d distinct wnids, want 345", len(seen))
	}
}

// TestImageNet21kNamedFromWordNet checks the 21k list against the shared
// copy line by line and the names Check gives it against WordNet.
func TestImageNet21kNamedFromWordNet(t *testing.T) {
	wn, err := wordnet.Open("")
	if err != nil {
		t.Fatalf("needs WordNet 3.0 (make deps): %v", err)
	}
	s, err := Builtin("imagenet21k")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("data/imagenet21k/imagenet21k_goog_synsets.txt")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(raw))
	if len(lines) != s.Len() {
		t.Fatalf("%d lines, %d classes", len(lines), s.Len())
	}
	for i, c := range s.Classes {
		if c.ID != lines[i] || c.WNID != lines[i] || c.Name != lines[i] || c.Lemma != "" {
			t.Fatalf("class %d before Check = %+v, want the wnid %s unnamed", i, c, lines[i])
		}
	}
	// imagenet (1k) classes are a subset: where both name a class, the
	// reviewed 1k name is one of the synset's words.
	if err := s.Check(wn); err != nil {
		t.Fatal(err)
	}
	byID := map[string]Class{}
	for _, c := range s.Classes {
		syn, err := wn.Synset(c.WNID)
		if err != nil {
			t.Fatal(err)
		}
		if c.Lemma != syn.Lemmas[0] || c.Name != syn.Name() {
			t.Fatalf("class %d (%s): name %q lemma %q, want %q %q", c.Index, c.WNID, c.Name, c.Lemma, syn.Name(), syn.Lemmas[0])
		}
		byID[c.ID] = c
	}
	if got := byID["n02119789"]; got.Name != "kit fox" || got.Lemma != "kit_fox" {
		t.Errorf("n02119789 = %q/%q, want kit fox/kit_fox", got.Name, got.Lemma)
	}
	in1k, err := Builtin("imagenet")
	if err != nil {
		t.Fatal(err)
	}
	shared := 0
	for _, c := range in1k.Classes {
		if d, ok := byID[c.WNID]; ok {
			shared++
			syn, _ := wn.Synset(d.WNID)
			if !hasLemma(syn, c.Lemma) {
				t.Errorf("%s: the 1k name %q is not a word of the synset %v", c.WNID, c.Lemma, syn.Lemmas)
			}
		}
	}
	if shared < 990 {
		t.Errorf("only %d of ImageNet-1k's classes are in the 21k list", shared)
	}
}

func hasLemma(s *wordnet.Synset, lemma string) bool {
	want := strings.ToLower(strings.ReplaceAll(lemma, " ", "_"))
	for _, l := range s.Lemmas {
		if strings.ToLower(l) == want {
			return true
		}
	}
	return false
}

func TestParseFile(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, body, err string
		n               int
	}{
		{"plain", "n02119789\nn02012849\n", "", 2},
		{"named", "# comment\nkit fox\tn02119789\n\ncrane\tn02012849\n", "", 2},
		{"typo", "n02119789\nn0201284x\n", "typo.txt:2: \"n0201284x\" is not a wnid", 0},
		{"dup", "n02119789\nn02119789\n", "typo", 0},
		{"empty", "# nothing\n", "no classes", 0},
	}
	tests[3].err = "dup.txt:2: wnid n02119789 repeats line 1"
	for _, tt := range tests {
		p := filepath.Join(dir, tt.name+".txt")
		os.WriteFile(p, []byte(tt.body), 0o644)
		s, err := Load(p)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: error %v, want %q", tt.name, err, tt.err)
			}
			continue
		}
		if err != nil || s.Len() != tt.n {
			t.Errorf("%s: %v, %d classes", tt.name, err, tt.n)
		}
	}
}

func TestCheckNamesLineOfUnknownWNID(t *testing.T) {
	wn, err := wordnet.Open("")
	if err != nil {
		t.Fatalf("needs WordNet 3.0 (make deps): %v", err)
	}
	p := filepath.Join(t.TempDir(), "mine.txt")
	os.WriteFile(p, []byte("# my classes\nfox\tn02119789\nghost\tn02119788\n"), 0o644)
	s, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	err = s.Check(wn)
	if err == nil || !strings.Contains(err.Error(), "mine.txt:3") || !strings.Contains(err.Error(), "n02119788") {
		t.Fatalf("Check = %v, want file:line and the wnid", err)
	}
}

func TestLoadUnknown(t *testing.T) {
	if _, err := Load("imagenett"); err == nil || !strings.Contains(err.Error(), "imagenet") {
		t.Fatalf("Load(imagenett) = %v, want an error listing the built-in sets", err)
	}
}

// A misspelt built-in name is unknown, and the error names the nearest sets.
func TestLoadMisspeltNameSuggests(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{"cifar-100", "; did you mean cifar100?"},
		{"fashion_mnist", "; did you mean fashion-mnist?"},
		{"cub", "; did you mean cub200?"},
	} {
		_, err := Load(tc.spec)
		if !errors.Is(err, ErrUnknownSet) || !strings.HasSuffix(err.Error(), tc.want) {
			t.Errorf("Load(%q) = %v; want ErrUnknownSet ending %q", tc.spec, err, tc.want)
		}
	}
}
