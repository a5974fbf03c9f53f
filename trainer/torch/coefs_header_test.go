package torch

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// lt_coefs of shim.h and the one Go form hold the same coefficients in the
// same order, all C floats: cCoefs copies Coefs.Float32s into the struct
// as an array, so a field added, removed or moved on one side only fails
// here (the other forms: internal/coefs).
func TestCoefsMatchHeader(t *testing.T) {
	h, err := os.ReadFile("shim.h")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)typedef struct \{([^}]*)\} lt_coefs;`).FindSubmatch(h)
	if m == nil {
		t.Fatal("shim.h: no typedef struct { ... } lt_coefs;")
	}
	body := regexp.MustCompile(`(?s)/\*.*?\*/`).ReplaceAllString(string(m[1]), "")
	var header []string
	for _, decl := range strings.Split(body, ";") {
		f := strings.Fields(decl)
		if len(f) == 0 {
			continue
		}
		if len(f) != 2 || f[0] != "float" {
			t.Errorf("lt_coefs field %q: want `float name;`", strings.Join(f, " "))
			continue
		}
		header = append(header, f[1])
	}
	var goNames []string
	for _, term := range (Coefs{}).Terms() {
		goNames = append(goNames, term.C)
	}
	if !reflect.DeepEqual(header, goNames) {
		t.Errorf("lt_coefs fields %v, Coefs' c tags in order %v", header, goNames)
	}
}
