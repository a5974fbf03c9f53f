package labels

import (
	"strings"
	"testing"
)

// A label file with a line longer than the limit names the line.
func TestParseLongLine(t *testing.T) {
	_, err := Parse(strings.NewReader("n02119789\n"+strings.Repeat("x", 2<<20)+"\n"), "labels.txt")
	if err == nil || err.Error() != "labels.txt: line 2: longer than 1 MiB (the limit): input too large" {
		t.Fatalf("err = %v", err)
	}
}

// FuzzParse: no label file panics the parser; accepted classes are
// numbered in order with valid, distinct wnids.
func FuzzParse(f *testing.F) {
	f.Add("n02119789\n# comment\n\nkit fox\tn02119022\r\n")
	f.Add("n0211978\n")
	f.Add("a\tb\tc\n")
	f.Fuzz(func(t *testing.T, in string) {
		s, err := Parse(strings.NewReader(in), "f")
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for i, c := range s.Classes {
			if c.Index != i || !validWNID(c.WNID) || seen[c.WNID] {
				t.Fatalf("class %d: %+v", i, c)
			}
			seen[c.WNID] = true
		}
	})
}
