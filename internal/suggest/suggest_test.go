package suggest

import (
	"slices"
	"testing"
)

func TestDistance(t *testing.T) {
	// Hand-counted edits.
	for _, tc := range []struct {
		a, b string
		d    int
	}{
		{"", "", 0}, {"abc", "", 3}, {"kitten", "sitting", 3}, {"resnet50", "resnet18", 2},
		{"flaw", "lawn", 2}, {"ε", "e", 1}, {"densenet", "densenet", 0},
		// An adjacent swap is one edit (two in plain Levenshtein), once
		// per pair: "ca" → "abc" is 3, not 2 (no edit twice on one span).
		{"modle", "model", 1}, {"ab", "ba", 1}, {"abcd", "badc", 2}, {"ca", "abc", 3},
		{"resnte18", "resnet18", 1}, {"lcll", "lcl", 1},
	} {
		if got := Distance(tc.a, tc.b); got != tc.d {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.d)
		}
	}
}

func TestClosest(t *testing.T) {
	names := []string{"resnet18", "resnet50", "resnext50-32x4d", "cnn", "mlp", "densenet"}
	for _, tc := range []struct {
		name string
		want []string
	}{
		{"resnet5", []string{"resnet50", "resnet18"}},
		{"Resnet-50", []string{"resnet50", "resnet18"}}, // 1 and 3 edits
		{"cnm", []string{"cnn"}},
		{"vgg16", nil},
		{"resnext", []string{"resnext50-32x4d"}},
		{"mpl", []string{"mlp"}}, // a swap: one edit
	} {
		if got := Closest(tc.name, names); !slices.Equal(got, tc.want) {
			t.Errorf("Closest(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := DidYouMeanFlag("epoch", []string{"epochs", "batch"}); got != "; did you mean --epochs?" {
		t.Errorf("DidYouMeanFlag = %q", got)
	}
	if got := DidYouMean("cnm", names); got != "; did you mean cnn?" {
		t.Errorf("DidYouMean = %q", got)
	}
	if got := DidYouMean("vgg16", names); got != "" {
		t.Errorf("DidYouMean of nothing close = %q", got)
	}
}
