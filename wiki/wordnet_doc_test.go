package wiki

import (
	"strings"
	"testing"

	"github.com/lcl-project/lcl/wordnet"
)

func TestWordNetDocument(t *testing.T) {
	animal := &wordnet.Synset{ID: "n1", Lemmas: []string{"animal", "animate_being"}, Gloss: "a living organism", Hyponyms: []string{"n2"}}
	bird := &wordnet.Synset{ID: "n2", Lemmas: []string{"bird"}, Gloss: "warm-blooded egg-laying vertebrates", Hypernyms: []string{"n1"}}
	crane := &wordnet.Synset{ID: "n3", Lemmas: []string{"crane"}, Gloss: "large long-necked wading bird",
		Examples:  []string{"the crane stood in the marsh", "cranes fly"},
		Hypernyms: []string{"n2"}, InstanceHypernyms: []string{"n6"}, Hyponyms: []string{"n4", "n99"}, InstanceHyponyms: []string{"n5"}}
	whooper := &wordnet.Synset{ID: "n4", Lemmas: []string{"whooping_crane", "whooper"}, Gloss: "rare North American crane", Hypernyms: []string{"n3"}}
	famous := &wordnet.Synset{ID: "n5", Lemmas: []string{"Old_Bill"}, Gloss: "a made-up famous crane", InstanceHypernyms: []string{"n3"}}
	symbol := &wordnet.Synset{ID: "n6", Lemmas: []string{"symbol"}, Gloss: "something that stands for something else"}
	lone := &wordnet.Synset{ID: "n7", Lemmas: []string{"lone_wolf"}, Gloss: ""}
	wn := wordnet.New(animal, bird, crane, whooper, famous, symbol, lone)

	tests := []struct {
		name string
		s    *wordnet.Synset
		want string
	}{
		{"root: itself and its hyponym", animal, "animal, animate being: a living organism\n" +
			"bird: warm-blooded egg-laying vertebrates"},
		{"hypernyms, instance hypernyms, hyponyms, instance hyponyms in that order; missing pointer skipped", crane,
			"crane: large long-necked wading bird \"the crane stood in the marsh\" \"cranes fly\"\n" +
				"bird: warm-blooded egg-laying vertebrates\n" +
				"symbol: something that stands for something else\n" +
				"whooping crane, whooper: rare North American crane\n" +
				"Old Bill: a made-up famous crane"},
		{"leaf with hypernym only", whooper, "whooping crane, whooper: rare North American crane\n" +
			"crane: large long-necked wading bird \"the crane stood in the marsh\" \"cranes fly\""},
		{"isolated synset with empty gloss", lone, "lone wolf: "},
	}
	// Only the synset's own pointers count: bird lists no hyponyms in this
	// fake, so crane does not appear in bird's document.
	if got := WordNetDocument(wn, bird); strings.Contains(got, "crane") {
		t.Errorf("bird document follows a pointer it does not have: %q", got)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := WordNetDocument(wn, tt.s); got != tt.want {
				t.Errorf("WordNetDocument(%s) =\n%q\nwant\n%q", tt.s.ID, got, tt.want)
			}
		})
	}
}

func TestWordNetDocumentRealWordNet(t *testing.T) {
	wn := openWordNet(t)
	crane, err := wn.Synset("n02012849") // crane, the bird
	if err != nil {
		t.Fatal(err)
	}
	doc := WordNetDocument(wn, crane)
	lines := strings.Split(doc, "\n")
	if want := 1 + len(crane.Parents()) + len(crane.Hyponyms) + len(crane.InstanceHyponyms); len(lines) != want {
		t.Fatalf("crane document has %d lines, want %d:\n%s", len(lines), want, doc)
	}
	if !strings.HasPrefix(lines[0], "crane: large long-necked wading bird") {
		t.Errorf("first line %q does not describe the crane", lines[0])
	}
	if !strings.HasPrefix(lines[1], "wading bird, wader:") {
		t.Errorf("second line %q is not the hypernym wading bird", lines[1])
	}
	if !strings.Contains(doc, "whooping crane, whooper, Grus americana:") {
		t.Errorf("crane document lacks its hyponym whooping crane:\n%s", doc)
	}
	if strings.Contains(doc, "_") {
		t.Errorf("document still has underscores:\n%s", doc)
	}
	// Every noun synset gets a non-empty document starting with its first lemma.
	for _, s := range wn.Nouns() {
		d := WordNetDocument(wn, s)
		if !strings.HasPrefix(d, s.Name()) {
			t.Fatalf("%s: document %q does not start with %q", s.ID, d[:min(len(d), 60)], s.Name())
		}
	}
}

func BenchmarkWordNetDocumentAllNouns(b *testing.B) {
	wn, err := wordnet.Open("")
	if err != nil {
		b.Fatal(err)
	}
	nouns := wn.Nouns()
	b.ResetTimer()
	for b.Loop() {
		for _, s := range nouns {
			_ = WordNetDocument(wn, s)
		}
	}
}

func openWordNet(t *testing.T) *wordnet.DB {
	t.Helper()
	wn, err := wordnet.Open("")
	if err != nil {
		t.Fatalf("WordNet 3.0 is required for this test (run `make deps`, or apt-get install wordnet-base): %v", err)
	}
	return wn
}

// TestWordNetLineIsTheDocumentsFirstLine: the one line the doc2vec corpus
// takes is the first line of the synset's document, for every noun.
func TestWordNetLineIsTheDocumentsFirstLine(t *testing.T) {
	wn, err := wordnet.Open("")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range wn.Nouns() {
		first, _, _ := strings.Cut(WordNetDocument(wn, s), "\n")
		if got := WordNetLine(s); got != first {
			t.Fatalf("%s: WordNetLine %q, the document's first line %q", s.ID, got, first)
		}
	}
}
