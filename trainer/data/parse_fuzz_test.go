package data

import (
	"bytes"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// FuzzParseSpec: no data set spec panics; an accepted one names a known
// kind and a directory, and its options pass the kind's checks (mean and
// std per channel, sizes, crop ranges). A spec with a classes= key reads
// that file: FuzzReadClassList covers the file, and this target leaves such
// specs out (a fuzzed path could name a device that never ends).
func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{
		"fashion-mnist", "mnist:/m?mean=0.5&std=0.25", "cifar10:/d?size=24&pad=2&flip=false",
		"cifar100:/d?labels=coarse", "cub:/c?augment=none&skip-bad=true",
		"folder:/x?train=a&val=b&size=224&resize=256&rrc=true&scale=0.08,1&ratio=0.75,1.333",
		"nabirds:/n?mean=1,2,3&std=0,1,1", "cifar10:/d?size=40&resize=32", "cifar10:/d?scale=1,0.5",
		"folder", "imagenet:/x", "cifar10:/d?%zz", "cifar10:/a?b:c?size=8&resize=8", "mnist:/m?mean=NaN&std=Inf",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if i := strings.LastIndexByte(s, '?'); i >= 0 {
			if q, err := url.ParseQuery(s[i+1:]); err == nil && q.Has("classes") {
				return
			}
		}
		sp, err := ParseSpec(s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "data: spec ") {
				t.Fatalf("error %q does not name the spec", err)
			}
			return
		}
		if _, err := Defaults(sp.Kind); err != nil || sp.Dir == "" {
			t.Fatalf("accepted kind %q (%v), directory %q", sp.Kind, err, sp.Dir)
		}
		if err := sp.Options.check(sp.Kind); err != nil {
			t.Fatalf("accepted options fail their checks: %v", err)
		}
	})
}

// FuzzReadClassList: no class list panics; an accepted one holds at least
// one name, at most one per line, each a first field (no space, no '#').
func FuzzReadClassList(f *testing.F) {
	f.Add([]byte("n01440764 tench\nn01443537 goldfish\n"))
	f.Add([]byte("# header\n\n  cat  \r\ndog\tanimal\n"))
	f.Add([]byte("#only comments\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		names, err := parseClassList(bytes.NewReader(in), "c.txt")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "c.txt: ") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		if len(names) == 0 || len(names) > bytes.Count(in, []byte("\n"))+1 {
			t.Fatalf("%d names from %d lines", len(names), bytes.Count(in, []byte("\n"))+1)
		}
		for _, n := range names {
			if n == "" || strings.HasPrefix(n, "#") || len(strings.Fields(n)) != 1 {
				t.Fatalf("name %q", n)
			}
		}
	})
}

// FuzzReadPairs: no "<id> <value>" file panics; an accepted one has unique,
// non-empty ids in file order and trimmed, non-empty values, and reads back
// the same written out again.
func FuzzReadPairs(f *testing.F) {
	f.Add([]byte("1 001.Black_footed_Albatross/Black_Footed_Albatross_0046_18.jpg\n2 a b c\n"))
	f.Add([]byte("\n  7   spaced value  \r\n8 x\n"))
	f.Add([]byte("1 a\n1 b\n"))
	f.Add([]byte("lonely\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		m, order, err := parsePairs(bytes.NewReader(in), "p.txt")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "p.txt") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		if len(order) != len(m) {
			t.Fatalf("%d ids in order, %d in the map", len(order), len(m))
		}
		var out bytes.Buffer
		for _, k := range order {
			v, ok := m[k]
			if !ok || k == "" || strings.Contains(k, " ") || v == "" || v != strings.TrimSpace(v) {
				t.Fatalf("pair %q %q (in map: %v)", k, v, ok)
			}
			out.WriteString(k + " " + v + "\n")
		}
		m2, order2, err := parsePairs(&out, "again")
		if err != nil || !slices.Equal(order, order2) || len(m2) != len(m) {
			t.Fatalf("written out and read again: %v, order %q, want %q", err, order2, order)
		}
		for k, v := range m {
			if m2[k] != v {
				t.Fatalf("id %q: %q read again as %q", k, v, m2[k])
			}
		}
	})
}
