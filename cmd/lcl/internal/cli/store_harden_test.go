package cli

import (
	"bufio"
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/simstore"
)

// storeWriter stands in for an lcl that writes to the store (lcl embed)
// and is killed: it stores articles until it is, saying "wrote" after 10.
func storeWriter(dir string) int {
	s, err := simstore.Open(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for i := 0; ; i++ {
		if err := s.PutArticles(context.Background(), simstore.Article{LabelSet: "toy", ClassID: fmt.Sprint("n", i), Text: "text"}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if i == 9 {
			fmt.Println("wrote")
		}
	}
}

// files is the name, size and digest of every file under dir.
func files(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			raw, _ := os.ReadFile(p)
			fmt.Fprintf(&b, "%s %d %x\n", d.Name(), len(raw), sha256.Sum256(raw))
		}
		return err
	})
	return b.String()
}

func wantOneLine(t *testing.T, what string, r cliResult, code int, want string) {
	t.Helper()
	if r.code != code || strings.Count(r.err, "\n") != 1 || !strings.Contains(r.err, want) {
		t.Errorf("%s: exit %d, stderr %q; want exit %d and one line saying %q", what, r.code, r.err, code, want)
	}
}

// The commands that only read the store never change a file of it, even
// of a damaged one, and say what is wrong in one line (issue 23, items 1
// and 4: a missing MANIFEST used to list nothing, exit 0 and overwrite a
// table; a truncated table, a Badger goroutine panic).
func TestReadCommandsLeaveDamagedStoreAlone(t *testing.T) {
	for _, c := range []struct {
		name   string
		damage func(dir string) error
		ls     string // what store ls says
		verify string // the damaged: line of store verify
	}{
		{"no MANIFEST", func(dir string) error { return os.Remove(filepath.Join(dir, "MANIFEST")) },
			"its MANIFEST is missing", "damaged: file MANIFEST: missing: "},
		{"table truncated to 100 bytes", func(dir string) error {
			ts, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
			return os.Truncate(ts[0], 100)
		}, "is damaged (its index or last block", "its index or last block is damaged"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, _ := fixtureStore(t)
			if err := c.damage(dir); err != nil {
				t.Fatal(err)
			}
			before := files(t, dir)
			for _, args := range [][]string{{"store", "ls"}, {"store", "info"}, {"store", "export", "art/toy/n01"}} {
				r := cliRun(t, append([]string{"--store", dir}, args...)...)
				wantOneLine(t, strings.Join(args, " "), r, ExitFailure, c.ls)
			}
			r := cliRun(t, "--store", dir, "store", "verify")
			if r.code != ExitFailure || !strings.Contains(r.out, c.verify) || strings.Count(r.err, "\n") != 1 || strings.Contains(r.err, "goroutine") {
				t.Errorf("store verify: exit %d, stdout %q, stderr %q; want exit 1 and %q", r.code, r.out, r.err, c.verify)
			}
			if after := files(t, dir); after != before {
				t.Errorf("the read commands changed the store:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

// A folder without a store lists as empty, and is not created.
func TestReadCommandsCreateNoStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "none")
	for _, args := range [][]string{{"store", "ls"}, {"store", "info"}, {"store", "verify"}} {
		if r := cliRun(t, append([]string{"--store", dir}, args...)...); r.code != 0 {
			t.Errorf("%v on no store: exit %d, %q", args, r.code, r.err)
		}
	}
	if _, err := os.Stat(dir); err == nil {
		t.Error("a read command created the store folder")
	}
}

// After kill -9 of a writer, store verify says in one line what to run
// and changes nothing; store ls recovers the store as a writing command
// would (one line says so) and lists every committed record (item 5).
func TestReadAfterKilledWriter(t *testing.T) {
	t.Parallel() // store commands alone, no plugin (parallelOK)
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "LCL_TEST_STORE_WRITER="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	if line, err := bufio.NewReader(out).ReadString('\n'); line != "wrote\n" {
		t.Fatalf("writer: %q, %v", line, err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	before := files(t, dir)
	r := cliRun(t, "--store", dir, "store", "verify")
	wantOneLine(t, "store verify after kill -9", r, ExitFailure, "run `lcl store recover`")
	if files(t, dir) != before {
		t.Error("store verify changed the store")
	}
	r = cliRun(t, "--store", dir, "store", "ls", "--all", "--kind", "article")
	if r.code != 0 || !strings.Contains(r.err, "recovered the store") {
		t.Fatalf("store ls after kill -9: exit %d, stderr %q", r.code, r.err)
	}
	for i := range 10 {
		if !strings.Contains(r.out, fmt.Sprintf("art/toy/n%d ", i)) {
			t.Errorf("store ls after recovery lacks art/toy/n%d: %q", i, r.out)
		}
	}
	if r := cliRun(t, "--store", dir, "store", "verify"); r.code != 0 {
		t.Errorf("verify after recovery: exit %d, %q %q", r.code, r.out, r.err)
	}
}
