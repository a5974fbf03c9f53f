package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/plugins/strategy"
	"github.com/lcl-project/lcl/trainer"
)

// heightLine counts the mistakes at every height that has one, the last
// element as "and more".
func TestHeightLine(t *testing.T) {
	capped := make([]int64, trainer.HierHeights)
	capped[2], capped[trainer.HierHeights-1] = 1, 4
	for _, tc := range []struct {
		name string
		h    trainer.HierMetrics
		want string
	}{
		{"none", trainer.HierMetrics{}, ""},
		{"some", trainer.HierMetrics{Mistakes: 47, MistakesByHeight: []int64{0, 12, 30, 0, 5}}, "mistakes by LCA height  1: 12  2: 30  4: 5  (47 mistakes)"},
		{"capped", trainer.HierMetrics{Mistakes: 5, MistakesByHeight: capped}, "mistakes by LCA height  2: 1  31+: 4  (5 mistakes)"},
	} {
		if got := heightLine(tc.h); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// Every built-in strategy has its loss in `lcl help methods` and in
// docs/methods.md, the page README and the help topic point to.
func TestMethodsDocumentEveryStrategy(t *testing.T) {
	r := cliRun(t, "help", "methods")
	if r.code != ExitOK || !strings.Contains(r.out, "docs/methods.md") {
		t.Fatalf("lcl help methods: exit %d\n%s%s", r.code, r.out, r.err)
	}
	page, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "docs", "methods.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range strategy.Names() {
		if !strings.Contains(r.out, "\n  "+name+" ") {
			t.Errorf("lcl help methods has no line of %s", name)
		}
		if !strings.Contains(string(page), "## "+name+" ") && !strings.Contains(string(page), "## "+name+"\n") {
			t.Errorf("docs/methods.md has no section on %s", name)
		}
	}
}
