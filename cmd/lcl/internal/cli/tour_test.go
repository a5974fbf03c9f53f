package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// tourCommands are the commands of the README's tour, as written: the
// first sh block after "## A short tour", one command a line, comments cut.
func tourCommands(t *testing.T) [][]string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, tour, ok := strings.Cut(string(raw), "## A short tour")
	if !ok {
		t.Fatal("README.md has no section \"## A short tour\"")
	}
	_, block, ok := strings.Cut(tour, "```sh\n")
	block, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 {
		t.Fatal("the tour has no ```sh block")
	}
	var cmds [][]string
	for _, line := range strings.Split(block, "\n") {
		line, _, _ = strings.Cut(line, "#")
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if f[0] != "lcl" {
			t.Fatalf("tour line %q does not run lcl", line)
		}
		cmds = append(cmds, f[1:])
	}
	return cmds
}

// quick applies the small settings the README names for the tour's long
// commands: embed and train with --epochs 1.
func quick(args []string) []string {
	if args[0] != "embed" && args[0] != "train" {
		return args
	}
	out := slices.Clone(args)
	if i := slices.Index(out, "--epochs"); i >= 0 {
		out[i+1] = "1"
		return out
	}
	return append(out, "--epochs", "1")
}

// Every command of the README's tour names a command and flags lcl has,
// and the files it reads (the tour's grid) are in the repository. The
// e2e test TestReadmeTour runs them all on a fresh store (minutes).
func TestReadmeTourParses(t *testing.T) {
	cmds := tourCommands(t)
	if len(cmds) < 10 {
		t.Fatalf("the tour has %d commands", len(cmds))
	}
	for _, args := range cmds {
		root := NewRootCmd(&Factory{IO: &IOStreams{}})
		cmd, rest, err := root.Find(args)
		if err == nil {
			err = cmd.ParseFlags(rest)
		}
		if err == nil {
			err = cmd.ValidateArgs(cmd.Flags().Args())
		}
		if err != nil || cmd == root {
			t.Errorf("lcl %s: %v", strings.Join(args, " "), err)
		}
		for _, a := range args {
			if strings.HasPrefix(a, "experiments/") {
				if _, err := os.Stat(filepath.Join("..", "..", "..", "..", a)); err != nil {
					t.Errorf("lcl %s: %v", strings.Join(args, " "), err)
				}
			}
		}
	}
}
