package simstore

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// snapshot is the name, size and SHA-256 of every file under dir.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		m[d.Name()] = fmt.Sprintf("%d %x", len(b), sha256.Sum256(b))
		return nil
	})
	return m
}

func sameSnapshot(t *testing.T, what string, a, b map[string]string) {
	t.Helper()
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("%s changed the store's files:\nbefore %v\nafter  %v", what, a, b)
	}
}

func oneLineErr(t *testing.T, what string, err error, target error, want string) {
	t.Helper()
	if err == nil || !errors.Is(err, target) || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Errorf("%s: %v; want one line wrapping %v and saying %q", what, err, target, want)
	}
}

// A store whose MANIFEST is gone is damaged: neither a read-only nor a
// writing open may start an empty store over its tables (Badger would
// reuse the first table's name), VerifyTables lists it, and nothing in the
// folder changes.
func TestMissingManifestRefusedUntouched(t *testing.T) {
	dir := sample(t)
	if err := os.Remove(filepath.Join(dir, "MANIFEST")); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)
	_, err := Open(dir, ReadOnly(), EmptyIfMissing())
	oneLineErr(t, "read-only open", err, ErrDamaged, "its MANIFEST is missing, but it holds 1 table and ")
	_, err = Open(dir)
	oneLineErr(t, "writing open", err, ErrDamaged, "its MANIFEST is missing")
	if err := Recover(dir); !errors.Is(err, ErrDamaged) {
		t.Errorf("Recover: %v", err)
	}
	n, probs, err := VerifyTables(dir)
	if err != nil || n != 1 || len(probs) != 1 || probs[0].File != "MANIFEST" || !strings.HasPrefix(probs[0].String(), "file MANIFEST: missing: ") {
		t.Errorf("VerifyTables: %d, %v, %v", n, probs, err)
	}
	sameSnapshot(t, "opening a store without its MANIFEST", before, snapshot(t, dir))
}

// A folder without a store: a read-only open creates nothing, and with
// EmptyIfMissing reads as an empty store that refuses writes.
func TestReadOnlyOpenCreatesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "none")
	s, err := Open(dir, ReadOnly(), EmptyIfMissing())
	if err != nil {
		t.Fatal(err)
	}
	if es, err := s.List(context.Background(), ""); err != nil || len(es) != 0 {
		t.Errorf("List: %v, %v", es, err)
	}
	if err := s.PutArticles(context.Background(), Article{LabelSet: "x", ClassID: "a", Text: "t"}); err == nil {
		t.Error("a write through an empty read-only store succeeded")
	}
	if s.Dir() != dir {
		t.Errorf("Dir() = %q, want %q", s.Dir(), dir)
	}
	s.Close()
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the folder was created: %v", err)
	}
	if err := Recover(dir); !errors.Is(err, ErrNotFound) {
		t.Errorf("Recover of no store: %v", err)
	}
}

// A table file truncated to 100 bytes, emptied or zeroed makes Badger
// panic in a goroutine of its own (or fail) when it opens the store: Open
// names the file in one line instead, and VerifyTables reports it.
func TestDamagedTableIsOneLine(t *testing.T) {
	for _, c := range []struct {
		name   string
		damage func(path string, size int64) error
	}{
		{"truncated", func(p string, _ int64) error { return os.Truncate(p, 100) }},
		{"empty", func(p string, _ int64) error { return os.Truncate(p, 0) }},
		{"zeroed", func(p string, n int64) error { return os.WriteFile(p, make([]byte, n), 0o644) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := sample(t)
			tables, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
			st, _ := os.Stat(tables[0])
			if err := c.damage(tables[0], st.Size()); err != nil {
				t.Fatal(err)
			}
			name := filepath.Base(tables[0])
			before := snapshot(t, dir)
			for _, opts := range [][]Option{{ReadOnly()}, nil} {
				_, err := Open(dir, opts...)
				oneLineErr(t, "Open", err, ErrDamaged, "table file "+name+" is damaged")
			}
			_, probs, err := VerifyTables(dir)
			if err != nil || len(probs) != 1 || probs[0].File != name || !strings.HasPrefix(probs[0].Reason, "its index or last block is damaged") || strings.Contains(probs[0].Reason, "\n") {
				t.Errorf("VerifyTables: %q, %v", probs, err)
			}
			sameSnapshot(t, "opening a damaged store", before, snapshot(t, dir))
		})
	}
}

// A store folder someone else owns, or anybody may write, is refused as a
// plugin folder is: whoever can write it decides what lcl reads.
func TestUntrustedStoreRefused(t *testing.T) {
	dir := sample(t)
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	for _, opts := range [][]Option{{ReadOnly()}, nil} {
		_, err := Open(dir, opts...)
		oneLineErr(t, "Open of a folder mode 0777", err, ErrUntrusted, "is writable by others (mode drwxrwxrwx; chmod o-w ")
	}
	os.Chmod(dir, 0o755)
	if os.Geteuid() == 0 { // only root can give a folder away
		if err := os.Chown(dir, 4242, 4242); err != nil {
			t.Fatal(err)
		}
		_, err := Open(dir, ReadOnly())
		oneLineErr(t, "Open of another user's folder", err, ErrUntrusted, "is owned by uid 4242, not by you")
		os.Chown(dir, 0, 0)
	}
	s, err := Open(dir, ReadOnly())
	if err != nil {
		t.Fatalf("after chmod o-w: %v", err)
	}
	s.Close()
}

// After kill -9 of a writer the log ends in an incomplete entry: a
// read-only open says so in one line (and what to run) without changing a
// file; Recover keeps every record the writer had committed.
func TestKilledWriterRecovered(t *testing.T) {
	dir := t.TempDir()
	cmd, out, _ := helper(t, "articles", dir)
	waitLine(t, out, "wrote")
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	before := snapshot(t, dir)
	_, err := Open(dir, ReadOnly())
	oneLineErr(t, "read-only open after kill -9", err, ErrNeedsRecovery, "run `lcl store recover`")
	sameSnapshot(t, "a read-only open after kill -9", before, snapshot(t, dir))
	if err := Recover(dir); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir, ReadOnly())
	if err != nil {
		t.Fatalf("read-only open after Recover: %v", err)
	}
	defer s.Close()
	for i := range 20 {
		if a, err := s.GetArticle(context.Background(), "k", fmt.Sprint("c", i)); err != nil || a.Text != fmt.Sprint("text ", i) {
			t.Errorf("article %d after recovery: %v, %v", i, a, err)
		}
	}
}

// lcl reads a store's table files itself (VerifyTables, Open's checks)
// only under Badger's folder lock: beside a writer, which rewrites tables
// as it goes, it reports the store in use rather than damage.
func TestTablesReadUnderTheLock(t *testing.T) {
	dir := sample(t)
	cmd, out, in := helper(t, "hold", dir)
	waitLine(t, out, "ready")
	if _, _, err := VerifyTables(dir); !errors.Is(err, ErrLocked) {
		t.Errorf("VerifyTables beside a writer: %v, want ErrLocked", err)
	}
	in.Close()
	cmd.Wait() // the writer has closed the store
	_, out, in = helper(t, "holdro", dir)
	waitLine(t, out, "ready")
	defer in.Close()
	if n, probs, err := VerifyTables(dir); err != nil || n != 1 || len(probs) != 0 {
		t.Errorf("VerifyTables beside a reader: %d, %v, %v", n, probs, err)
	}
}
