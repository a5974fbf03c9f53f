package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/spf13/pflag"

	"github.com/lcl-project/lcl/trainer"
)

// cliResult is what one in-process lcl invocation printed and returned.
type cliResult struct {
	code     int
	out, err string
}

// cliRun runs lcl in-process with buffers for its streams.
func cliRun(t *testing.T, args ...string) cliResult {
	t.Helper()
	code, out, errs := runLCL(context.Background(), t, args...)
	return cliResult{code, out, errs}
}

// runLCL runs lcl in-process under ctx with buffers for its streams.
func runLCL(ctx context.Context, t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Run(ctx, args, &IOStreams{In: strings.NewReader(""), Out: &out, Err: &errb})
	return code, out.String(), errb.String()
}

func needWordNet(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/usr/share/wordnet/data.noun"); err != nil && os.Getenv("WNHOME") == "" {
		t.Fatalf("WordNet 3.0 is missing (%v): run `make deps` (installs Debian's wordnet-base)", err)
	}
}

func TestSynsetsImagenet(t *testing.T) {
	needWordNet(t)
	for _, args := range [][]string{{"synsets", "imagenet"}, {"synsets", "--synsets", "imagenet"}} {
		r := cliRun(t, args...)
		if r.code != 0 {
			t.Fatalf("%v: exit %d: %s", args, r.code, r.err)
		}
		lines := strings.Split(strings.TrimSuffix(r.out, "\n"), "\n")
		if len(lines) != 1001 || !strings.HasPrefix(lines[0], "INDEX") {
			t.Fatalf("%v: %d lines (first %q), want a header and 1000 rows", args, len(lines), lines[0])
		}
		// Row 0 is the tench, n01440764, with WordNet's gloss.
		if !strings.Contains(lines[1], "n01440764") || !strings.Contains(lines[1], "freshwater dace-like game fish") {
			t.Errorf("first row %q lacks the tench's wnid and gloss", lines[1])
		}
		for i, l := range lines[1:] {
			if f := strings.Fields(l); len(f) < 5 {
				t.Fatalf("row %d has no gloss: %q", i, l)
			}
		}
	}
}

func TestSynsetsBadFile(t *testing.T) {
	needWordNet(t)
	dir := t.TempDir()
	tests := []struct {
		name, content, wnid, line string
	}{
		{"malformed wnid", "n02119789\nn02119022\nn0211978x\n", "n0211978x", ":3:"},
		{"no such synset", "n02119789\n# comment\nfox\tn02119022\nn99999999\n", "n99999999", ":4:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_")+".txt")
			if err := os.WriteFile(path, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			r := cliRun(t, "synsets", path)
			if r.code != ExitFailure {
				t.Fatalf("exit %d, want 1 (stderr %q)", r.code, r.err)
			}
			if strings.Count(r.err, "\n") != 1 || !strings.Contains(r.err, tt.wnid) || !strings.Contains(r.err, path+tt.line) {
				t.Errorf("stderr %q: want one line naming %s and %s%s", r.err, tt.wnid, path, tt.line)
			}
			if r.out != "" {
				t.Errorf("stdout %q, want nothing", r.out)
			}
		})
	}
}

func TestExitCodesAndVersion(t *testing.T) {
	tests := []struct {
		args    []string
		code    int
		out     string // substring of stdout
		errLine string // substring of stderr
	}{
		{[]string{"version"}, ExitOK, "lcl " + Version, ""},
		{[]string{"--version"}, ExitOK, "lcl " + Version + " ", ""},
		{[]string{"--json", "version"}, ExitOK, `"message_type":"version"`, ""},
		{[]string{"version", "extra"}, ExitUsage, "", "takes no arguments"},
		// A lone argument meant for a flag: the flag is named.
		{[]string{"eval", "runs/x"}, ExitUsage, "", `takes no arguments, got ["runs/x"]: did you mean --checkpoint runs/x?`},
		{[]string{"embed", "imagenet"}, ExitUsage, "", "did you mean --synsets imagenet?"},
		{[]string{"similarity", "awa2", "--source", "visual"}, ExitUsage, "", "did you mean --synsets awa2?"},
		{[]string{"train", "runs/x"}, ExitUsage, "", `lcl train takes no arguments, got ["runs/x"]` + "\n"},
		{[]string{"--no-such-flag"}, ExitUsage, "", "unknown flag: --no-such-flag"},
		{[]string{"synsets", "--bogus"}, ExitUsage, "", "unknown flag: --bogus\n"},
		// A misspelt flag: the command's nearest flags (its own and the global ones).
		{[]string{"train", "--epoch", "5"}, ExitUsage, "", "unknown flag: --epoch; did you mean --epochs?"},
		{[]string{"embed", "--synset", "x"}, ExitUsage, "", "did you mean --synsets?"},
		{[]string{"report", "--stor", "x"}, ExitUsage, "", "did you mean --store or --store-wait?"},
		{[]string{"nosuchcommand"}, ExitUsage, "", `unknown command "nosuchcommand"`},
		{[]string{"synsets", "a", "b"}, ExitUsage, "", ""},
		{[]string{"synsets", "no-such-set-or-file"}, ExitFailure, "", "no-such-set-or-file"},
		{[]string{"exit-codes", "--help"}, ExitOK, "130", ""},
		// A negative wait is refused before the command runs (issue 48, item 9).
		{[]string{"--store-wait=-1s", "store", "ls"}, ExitUsage, "", `invalid argument "-1s" for "--store-wait" flag: want a duration ≥ 0 (0: fail at once)` + "\n"},
		{[]string{"--store-wait", "-5m", "experiment", "run", "nosuch.yaml"}, ExitUsage, "", `invalid argument "-5m" for "--store-wait" flag: want a duration ≥ 0`},
		{[]string{"--store-wait", "soon", "store", "ls"}, ExitUsage, "", `invalid argument "soon" for "--store-wait" flag: time: invalid duration "soon"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := cliRun(t, tt.args...)
			if r.code != tt.code || !strings.Contains(r.out, tt.out) || !strings.Contains(r.err, tt.errLine) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d, stdout with %q, stderr with %q",
					r.code, r.out, r.err, tt.code, tt.out, tt.errLine)
			}
		})
	}
}

// lcl train --help: at most 40 lines before the usage, every preset
// listed, no flag's usage over 90 characters, the flags under their
// groups' headings in the tables' order, and every help topic it names
// answers `lcl help TOPIC`.
func TestTrainHelpIsShort(t *testing.T) {
	r := cliRun(t, "train", "--help")
	prose, _, ok := strings.Cut(r.out, "\nUsage:")
	if r.code != ExitOK || !ok {
		t.Fatalf("exit %d:\n%s", r.code, r.out)
	}
	if n := strings.Count(prose, "\n") + 1; n > 40 {
		t.Errorf("%d lines before Usage:, want ≤ 40:\n%s", n, prose)
	}
	for _, p := range trainer.PresetNames() {
		if !strings.Contains(prose, p) {
			t.Errorf("preset %s not listed:\n%s", p, prose)
		}
	}
	newTrainCmd(&Factory{}).Flags().VisitAll(func(f *pflag.Flag) {
		if n := utf8.RuneCountInString(f.Usage); n > 90 {
			t.Errorf("--%s's usage is %d characters, want ≤ 90: %s", f.Name, n, f.Usage)
		}
	})
	var at []int
	for _, h := range []string{"Data flags:", "Model flags:", "Strategy flags:", "Augmentation flags:", "Optimisation flags:",
		"Learning rate flags:", "Model selection flags:", "Run flags:", "Device flags:", "Global Flags:"} {
		at = append(at, strings.Index(r.out, "\n"+h+"\n"))
	}
	if !slices.IsSorted(at) || at[0] < 0 {
		t.Errorf("flag groups at %v, want each once in order:\n%s", at, r.out)
	}
	if _, flags, _ := strings.Cut(r.out, "\nData flags:"); longestLine(flags) > 100 {
		t.Errorf("lcl train --help: a flag's line of %d characters", longestLine(flags))
	}
	_, more, _ := strings.Cut(prose, "More: lcl help ")
	more, _, _ = strings.Cut(more, ",")
	topics := strings.Split(more, " | ")
	if len(topics) < 5 {
		t.Fatalf("topics named: %q", topics)
	}
	for _, topic := range topics {
		h := cliRun(t, "help", topic)
		if h.code != ExitOK || strings.Count(h.out, "\n") < 5 || strings.Contains(h.out, "Unknown help topic") {
			t.Errorf("lcl help %s: exit %d\n%s%s", topic, h.code, h.out, h.err)
		}
		if l := longestLine(h.out); l > 100 {
			t.Errorf("lcl help %s: a line of %d characters", topic, l)
		}
	}
}

func longestLine(s string) int {
	n := 0
	for l := range strings.SplitSeq(s, "\n") {
		n = max(n, utf8.RuneCountInString(l))
	}
	return n
}
