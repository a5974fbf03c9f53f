package wordnet

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func openTestWordNet(t *testing.T) *DB {
	t.Helper()
	wn, err := Open("")
	if err != nil {
		t.Fatalf("WordNet 3.0 is required for this test (run `make deps`, or apt-get install wordnet-base): %v", err)
	}
	return wn
}

func TestOpenReadsAllNouns(t *testing.T) {
	wn := openTestWordNet(t)
	if got := wn.Len(); got != 82115 {
		t.Fatalf("Len() = %d, want WordNet 3.0's 82115 noun synsets", got)
	}
}

func TestSynsetByWNID(t *testing.T) {
	wn := openTestWordNet(t)
	tests := []struct {
		wnid      string
		lemmas    string
		glossHas  string
		hypernym  string
		instance  string
		nExamples int
	}{
		{"n02119789", "kit_fox,Vulpes_macrotis", "small grey fox of southwestern United States", "n02118333", "", 0},
		{"n02012849", "crane", "large long-necked wading bird", "n02000954", "", 0},
		{"n03126707", "crane", "lifts and moves heavy objects", "n03664675", "", 0},
		{"n00001740", "entity", "perceived or known or inferred", "", "", 0},
		// Instance hypernym and examples: Mississippi the river.
		{"n09356080", "Mississippi,Mississippi_River", "major North American river", "", "n09411430", 0},
		{"n02084071", "dog,domestic_dog,Canis_familiaris", "a member of the genus Canis", "n02083346", "", 1},
	}
	for _, tt := range tests {
		s, err := wn.Synset(tt.wnid)
		if err != nil {
			t.Fatalf("Synset(%s): %v", tt.wnid, err)
		}
		if got := strings.Join(s.Lemmas, ","); got != tt.lemmas {
			t.Errorf("%s lemmas = %q, want %q", tt.wnid, got, tt.lemmas)
		}
		if !strings.Contains(s.Gloss, tt.glossHas) {
			t.Errorf("%s gloss = %q, want it to contain %q", tt.wnid, s.Gloss, tt.glossHas)
		}
		if strings.Contains(s.Gloss, "\"") {
			t.Errorf("%s gloss %q still holds an example", tt.wnid, s.Gloss)
		}
		if tt.hypernym != "" && (len(s.Hypernyms) == 0 || s.Hypernyms[0] != tt.hypernym) {
			t.Errorf("%s hypernyms = %v, want first %s", tt.wnid, s.Hypernyms, tt.hypernym)
		}
		if tt.instance != "" && (len(s.InstanceHypernyms) == 0 || s.InstanceHypernyms[0] != tt.instance) {
			t.Errorf("%s instance hypernyms = %v, want %s", tt.wnid, s.InstanceHypernyms, tt.instance)
		}
		if len(s.Examples) != tt.nExamples {
			t.Errorf("%s examples = %q, want %d", tt.wnid, s.Examples, tt.nExamples)
		}
	}
}

func TestSynsetErrors(t *testing.T) {
	wn := openTestWordNet(t)
	for _, id := range []string{"n02119788", "x02119789", "n0211978", ""} {
		_, err := wn.Synset(id)
		if !errors.Is(err, ErrUnknownSynset) {
			t.Errorf("Synset(%q) error = %v, want ErrUnknownSynset", id, err)
		}
		if err != nil && id != "" && !strings.Contains(err.Error(), id) {
			t.Errorf("error %q does not name %q", err, id)
		}
	}
}

func TestLookupSenseOrder(t *testing.T) {
	wn := openTestWordNet(t)
	ss, err := wn.Lookup("Crane")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range ss {
		ids = append(ids, s.ID)
	}
	want := "n10914447,n10914331,n09295455,n03126707,n02012849"
	if got := strings.Join(ids, ","); got != want {
		t.Fatalf("Lookup(crane) = %s, want %s", got, want)
	}
	if ss, _ := wn.Lookup("kit fox"); len(ss) != 2 || ss[0].ID != "n02119789" {
		t.Fatalf("Lookup(kit fox) = %v", ss)
	}
	if ss, _ := wn.Lookup("no_such_lemma_xyz"); len(ss) != 0 {
		t.Fatalf("Lookup(unknown) = %v, want none", ss)
	}
}

func TestSplitGloss(t *testing.T) {
	tests := []struct {
		in, def string
		ex      []string
	}{
		{"a plain definition", "a plain definition", nil},
		{`def; "first example"; "second; with semicolon"`, "def", []string{"first example", "second; with semicolon"}},
		{`"only an example"`, "", []string{"only an example"}},
	}
	for _, tt := range tests {
		def, ex := splitGloss(tt.in)
		if def != tt.def || strings.Join(ex, "|") != strings.Join(tt.ex, "|") {
			t.Errorf("splitGloss(%q) = %q %q, want %q %q", tt.in, def, ex, tt.def, tt.ex)
		}
	}
}

func TestOpenBadInputNamesFileAndLine(t *testing.T) {
	dir := t.TempDir()
	good := "00001740 03 n 01 entity 0 000 | that which is perceived\n"
	bad := "00000063 03 n zz entity 0 000 | broken\n"
	cases := map[string]string{
		"w_cnt":  "  1 license\n" + bad,
		"offset": "  1 license\n" + good,
	}
	for name, body := range cases {
		if err := os.WriteFile(filepath.Join(dir, "data.noun"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Open(dir)
		if err == nil || !strings.Contains(err.Error(), "data.noun:2") || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: error = %v, want data.noun:2 and %q", name, err, name)
		}
	}
	if _, err := Open(filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "wordnet-base") {
		t.Errorf("missing dir error = %v, want install hint", err)
	}
}

// nltk 3.x on WordNet 3.0 gives these wup_similarity values.
func TestWuPalmerMatchesNLTK(t *testing.T) {
	wn := openTestWordNet(t)
	tests := []struct {
		a, b string
		want float64
	}{
		{"n02084071", "n02121620", 0.8571428571428571}, // dog.n.01, cat.n.01
		// nltk's quirk, kept on purpose: the lowest common hypernym is chosen
		// by minimum depth, so for dog (min depth 8 via domestic_animal) it is
		// canine (min depth 12), and dog is not 1 with itself.
		{"n02084071", "n02084071", 13.0 / 14.0},
		{"n02084071", "n00001740", 0.2}, // entity: depth 1; dog is 8 steps below it
	}
	for _, tt := range tests {
		got, err := wn.WuPalmer(tt.a, tt.b)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("WuPalmer(%s,%s) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}
