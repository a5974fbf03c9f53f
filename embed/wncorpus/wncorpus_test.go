package wncorpus

import (
	"os"
	"slices"
	"testing"

	"github.com/lcl-project/lcl/wordnet"
)

func TestDocuments(t *testing.T) {
	if _, err := os.Stat("/usr/share/wordnet/data.noun"); err != nil && os.Getenv("WNHOME") == "" {
		t.Fatalf("WordNet 3.0 is missing (%v): run `make deps` (installs Debian's wordnet-base)", err)
	}
	wn, err := wordnet.Open("")
	if err != nil {
		t.Fatal(err)
	}
	docs := Documents(wn)
	if len(docs) != 82115 {
		t.Fatalf("%d documents, want 82115", len(docs))
	}
	n := 0
	for _, d := range docs {
		n += len(d.Words)
	}
	// Measured once with an independent parser of data.noun (bench/embedbench).
	if n < 1_200_000 || n > 1_350_000 {
		t.Errorf("%d tokens, want about 1.27 M", n)
	}
	var kitFox []string
	for _, d := range docs {
		if d.Tag == "n02119789" {
			kitFox = d.Words
		}
	}
	want := []string{"kit", "fox", "vulpes", "macrotis", "small", "grey", "fox", "of", "southwestern", "united", "states"}
	if !slices.Equal(kitFox[:min(len(kitFox), len(want))], want) {
		t.Errorf("n02119789 document %q, want it to start with %q", kitFox, want)
	}
}
