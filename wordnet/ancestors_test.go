package wordnet

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// OpenAncestors reads the same synsets as Open, and exactly the closure of
// the wnids under Parents: checked against the full database for
// hand-picked classes and a seeded sample of every kind of synset.
func TestOpenAncestorsMatchesOpen(t *testing.T) {
	full := openTestWordNet(t)
	rng := rand.New(rand.NewPCG(7, 11))
	sample := []string{"n02121808", "n02129165", "n02958343", "n00001740", "n09917593"} // domestic cat, lion, car, entity, child
	for range 300 {
		sample = append(sample, full.Nouns()[rng.IntN(full.Len())].ID)
	}
	for _, wnids := range [][]string{sample[:1], sample[:5], sample} {
		want := map[string]bool{}
		queue := slices.Clone(wnids)
		for len(queue) > 0 {
			id := queue[0]
			queue = queue[1:]
			if want[id] {
				continue
			}
			want[id] = true
			s, err := full.Synset(id)
			if err != nil {
				t.Fatal(err)
			}
			queue = append(queue, s.Parents()...)
		}
		part, err := OpenAncestors("", wnids)
		if err != nil {
			t.Fatalf("OpenAncestors(%d wnids): %v", len(wnids), err)
		}
		if part.Len() != len(want) {
			t.Errorf("OpenAncestors(%d wnids) holds %d synsets, want the %d of their closure", len(wnids), part.Len(), len(want))
		}
		for _, s := range part.Nouns() {
			if !want[s.ID] {
				t.Errorf("%s is not an ancestor of the wnids", s.ID)
			}
			if f, _ := full.Synset(s.ID); !reflect.DeepEqual(s, f) {
				t.Errorf("%s: read at its offset %+v, Open's %+v", s.ID, s, f)
			}
		}
	}
}

func TestOpenAncestorsErrors(t *testing.T) {
	if _, err := OpenAncestors("", []string{"n02121808"}); err != nil {
		t.Fatalf("WordNet 3.0 is required for this test (run `make deps`): %v", err)
	}
	for _, c := range []struct{ wnid, want string }{
		{"cat", `"cat" is not a noun wnid`},
		{"n0212180", "is not a noun wnid"},
		{"n02121809", "n02121809: no noun synset at offset 02121809"}, // one byte into domestic cat's line
		{"n00000010", "no noun synset at offset 00000010"},            // the licence
		{"n99999999", "no noun synset at offset 99999999"},            // past the end
	} {
		_, err := OpenAncestors("", []string{"n02121808", c.wnid})
		if !errors.Is(err, ErrUnknownSynset) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("OpenAncestors(%q) = %v, want ErrUnknownSynset and %q", c.wnid, err, c.want)
		}
	}

	// A crafted data.noun: a broken line is named by file, byte and wnid;
	// a hypernym outside the file is an unknown synset; the last line
	// needs no newline.
	dir := t.TempDir()
	good := "00000000 03 n 01 entity 0 000 | that which is perceived\n"
	child := "00000056 03 n 01 thing 0 001 @ 00000000 n 0000 | a thing"
	if len(good) != 56 {
		t.Fatalf("fixture: entity's line is %d bytes", len(good))
	}
	write := func(body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "data.noun"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(good + child)
	wn, err := OpenAncestors(dir, []string{"n00000056"})
	if err != nil || wn.Len() != 2 || !wn.HasSynset("n00000000") {
		t.Errorf("thing and its hypernym: %v, %d synsets", err, wn.Len())
	}
	write(good + "00000056 03 n zz thing 0 000 | broken\n")
	if _, err := OpenAncestors(dir, []string{"n00000056"}); err == nil || !strings.Contains(err.Error(), "data.noun at byte 56 (n00000056): w_cnt") {
		t.Errorf("broken line: %v, want the file, byte, wnid and field", err)
	}
	write(good + "00000056 03 n 01 thing 0 001 @ 00000099 n 0000 | dangling\n")
	if _, err := OpenAncestors(dir, []string{"n00000056"}); !errors.Is(err, ErrUnknownSynset) {
		t.Errorf("dangling hypernym: %v, want ErrUnknownSynset", err)
	}
	write(good + "00000056 03 n 01 thing 0 000 | " + strings.Repeat("x", maxLine) + "\n")
	if _, err := OpenAncestors(dir, []string{"n00000056"}); err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("a line over the limit: %v", err)
	}
	if _, err := OpenAncestors(filepath.Join(dir, "missing"), []string{"n00000000"}); err == nil || !strings.Contains(err.Error(), "wordnet-base") {
		t.Errorf("missing dir: %v, want the install hint", err)
	}
}

// BenchmarkOpen and BenchmarkOpenAncestors: what a run's hierarchical
// metrics cost before its first step, all of WordNet against the synsets of
// a few classes and their ancestors.
func BenchmarkOpen(b *testing.B) {
	for b.Loop() {
		if _, err := Open(""); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOpenAncestors(b *testing.B) {
	wnids := []string{"n02121808", "n02129165", "n02958343", "n09917593", "n03595614", "n04199027"}
	for b.Loop() {
		if _, err := OpenAncestors("", wnids); err != nil {
			b.Fatal(err)
		}
	}
}
