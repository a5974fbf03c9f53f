package similarity

import (
	"strings"
	"testing"
)

// A choice parameter out of its set names the choices and the nearest one.
func TestChoiceNamesTheNearest(t *testing.T) {
	for _, tc := range []struct{ source, key, value, want string }{
		{"lca", "form", "heigt", `parameter form: "heigt" is not one of wup, height; did you mean height?`},
		{"simrank", "variant", "sta", `"sta" is not one of jeh-widom, star, undirected; did you mean star?`},
		{"lca", "form", "zzz", `parameter form: "zzz" is not one of wup, height`},
	} {
		p, err := newParams(map[string]string{tc.key: tc.value}, tc.source)
		if err != nil {
			t.Fatal(err)
		}
		var allowed []string
		switch tc.key {
		case "form":
			allowed = []string{"wup", "height"}
		case "variant":
			allowed = []string{"jeh-widom", "star", "undirected"}
		}
		_, err = p.choice(tc.key, allowed...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s=%s: %v, want %q", tc.source, tc.key, tc.value, err, tc.want)
		}
		if tc.value == "zzz" && strings.Contains(err.Error(), "did you mean") {
			t.Errorf("%v: no choice is near zzz", err)
		}
	}
}
