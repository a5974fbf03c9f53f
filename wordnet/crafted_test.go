package wordnet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The audit's malformed WordNet files: a pointer count of 2⁶² in data.noun
// (index out of range) and a negative synset count in index.noun
// (makeslice) panicked. Both are errors naming the file and line.
func TestCraftedWordNetCounts(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	good := "00000000 03 n 01 entity 0 000 | that which is perceived\n"
	for _, c := range []struct{ line, want string }{
		{"00000000 03 n 01 entity 0 4611686018427387904 @ 00001740 n 0000 | x\n", "data.noun:1: p_cnt 4611686018427387904 but only 4 fields follow"},
		{"00000000 03 n 01 entity 0 -3 | x\n", `data.noun:1: p_cnt "-3" is not a count`},
		{"00000000 03 n 7fffffff entity 0 000 | x\n", "data.noun:1: w_cnt 2147483647 but only 3 fields follow"},
	} {
		write("data.noun", c.line)
		_, err := Open(dir)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "wordnet: "+dir) {
			t.Errorf("data.noun %q: err = %v, want %q", c.line, err, c.want)
		}
	}
	write("data.noun", good)
	for _, c := range []struct{ line, want string }{
		{"entity n -5 14 @ ~ a b c d e f 1 0 00000000\n", `index.noun:1: synset_cnt "-5" and p_cnt "14" do not match the 15 fields`},
		{"entity n 1 9223372036854775807 1 0 00000000\n", `index.noun:1: synset_cnt "1" and p_cnt "9223372036854775807" do not match`},
		{"entity n 1 0 1 0 ../../x\n", `index.noun:1: synset offset "../../x" is not 8 decimal digits`},
		{"entity n 1 0 1 0 " + strings.Repeat("0", 2<<20) + "\n", "index.noun: line 1: longer than 1 MiB (the limit)"},
	} {
		write("index.noun", c.line)
		wn, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		_, err = wn.Lookup("entity")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("index.noun %.60q: err = %v, want %q", c.line, err, c.want)
		}
	}
}

// FuzzParseDataLine: no data.noun line panics the parser.
func FuzzParseDataLine(f *testing.F) {
	f.Add("02119789 05 n 02 kit_fox 0 Vulpes_velox 0 002 @ 02118333 n 0000 #m 02119022 n 0000 | small grey fox; \"a fox\"")
	f.Add("00001740 03 n 01 entity 0 003 ~ 00001930 n 0000 ~ 00002137 n 0000 ~ 04431553 n 0000 | that which is perceived")
	f.Add("00000000 03 n 01 entity 0 4611686018427387904 | x")
	f.Fuzz(func(t *testing.T, line string) {
		s, err := parseDataLine(line)
		if err == nil && (len(s.Lemmas) == 0 || len(s.ID) != 9) {
			t.Fatalf("accepted %q as %+v", line, s)
		}
	})
}

// FuzzParseIndexLine: no index.noun line panics the parser.
func FuzzParseIndexLine(f *testing.F) {
	f.Add("kit_fox n 1 1 @ 1 0 02119789")
	f.Add("entity n 1 3 @ ~ + 1 0 00001740")
	f.Add("x n -5 8 @ ~ a b c d e f 1 0 00000000")
	f.Fuzz(func(t *testing.T, line string) {
		_, ids, err := parseIndexLine(line)
		for _, id := range ids {
			if err == nil && !validWNID(id) {
				t.Fatalf("accepted wnid %q", id)
			}
		}
	})
}
