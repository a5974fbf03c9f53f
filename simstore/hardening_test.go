package simstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func withFreeSpace(f func(string) (int64, error)) Option {
	return func(o *options) { o.freeSpace = f }
}

// sample writes 50 small articles (kept in the table) and one of 2 MiB
// (kept in the value log), closes the store and returns its folder.
func sample(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 50 {
		if err := s.PutArticles(ctx, Article{LabelSet: "x", ClassID: fmt.Sprint("c", i), Text: fmt.Sprintf("text %d %0200d", i, i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutArticles(ctx, Article{LabelSet: "x", ClassID: "big", Text: strings.Repeat("y", 2<<20)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// flip flips one bit of the only file matching glob at fraction f of it.
func flip(t *testing.T, dir, glob string, f float64) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, glob))
	if len(files) != 1 {
		t.Fatalf("%d files %s", len(files), glob)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	b[int(f*float64(len(b)))] ^= 0x40
	if err := os.WriteFile(files[0], b, 0o644); err != nil {
		t.Fatal(err)
	}
	return filepath.Base(files[0])
}

// What docs/store.md says is detected where, checked: a damaged data block
// of a table (records may silently vanish from ordinary reads) is found by
// VerifyTables; a damaged table index stops the store from opening, naming
// the file; a damaged value-log entry is reported on read of its record.
func TestIntegrityDetection(t *testing.T) {
	clean := sample(t)
	if n, probs, err := VerifyTables(clean); err != nil || n != 1 || len(probs) != 0 {
		t.Fatalf("undamaged store: VerifyTables %d tables, %v, %v", n, probs, err)
	}
	s, err := Open(clean, ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	if n, probs, err := s.Verify(context.Background(), nil); err != nil || n != 51 || len(probs) != 0 {
		t.Fatalf("undamaged store: Verify %d records, %v, %v", n, probs, err)
	}
	s.Close()

	t.Run("data block", func(t *testing.T) {
		dir := sample(t)
		name := flip(t, dir, "*.sst", 0.3)
		_, probs, err := VerifyTables(dir)
		if err != nil || len(probs) != 1 || probs[0].File != name || !strings.HasPrefix(probs[0].Reason, "a data block fails its checksum: records with keys from ") {
			t.Fatalf("VerifyTables: %v, %v", probs, err)
		}
	})
	t.Run("index", func(t *testing.T) {
		dir := sample(t)
		name := flip(t, dir, "*.sst", 0.99)
		_, err := Open(dir, ReadOnly())
		want := fmt.Sprintf("simstore: %s: table file %s is damaged (its index or last block fails Badger's checksum), so the store cannot be opened", dir, name)
		if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Fatalf("Open: %v", err)
		}
		_, probs, _ := VerifyTables(dir)
		if len(probs) != 1 || probs[0].File != name || !strings.HasPrefix(probs[0].Reason, "its index or last block is damaged") {
			t.Fatalf("VerifyTables: %v", probs)
		}
	})
	t.Run("value log", func(t *testing.T) {
		dir := sample(t)
		flip(t, dir, "*.vlog", 0.5)
		s, err := Open(dir, ReadOnly())
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		n, probs, err := s.Verify(context.Background(), nil)
		if err != nil || n != 51 || len(probs) != 1 || probs[0].Key != "art/x/big" || probs[0].Reason != "the value cannot be read (its value-log entry is damaged)" {
			t.Fatalf("Verify: %d, %v, %v", n, probs, err)
		}
		if _, err := s.GetArticle(context.Background(), "x", "big"); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("GetArticle: %v", err)
		}
		if a, err := s.GetArticle(context.Background(), "x", "c7"); err != nil || !strings.HasPrefix(a.Text, "text 7 ") {
			t.Fatalf("another record: %v", err)
		}
	})
}

// The disk-full case: the store refuses to open for writing, or to write,
// while the disk has less free space than a write needs, with an error
// instead of Badger's SIGBUS; what was committed stays readable.
func TestLowDiskRefusesWrites(t *testing.T) {
	dir := sample(t)
	free := int64(1 << 40)
	fs := withFreeSpace(func(string) (int64, error) { return free, nil })
	free = 10 << 20
	if _, err := Open(dir, fs); !errors.Is(err, ErrNoSpace) || !strings.Contains(err.Error(), "10 MiB free, writing needs at least 128 MiB") {
		t.Fatalf("Open with 10 MiB free: %v", err)
	}
	free = 129 << 20
	s, err := Open(dir, fs)
	if err != nil {
		t.Fatal(err)
	}
	err = s.PutArticles(context.Background(), Article{LabelSet: "x", ClassID: "huge", Text: strings.Repeat("z", 4<<20)})
	if !errors.Is(err, ErrNoSpace) || !strings.Contains(err.Error(), "(nothing was written)") {
		t.Fatalf("a 4 MiB write with 129 MiB free: %v", err)
	}
	if err := s.Delete(context.Background(), "art/x/c1"); !errors.Is(err, ErrNoSpace) && err != nil {
		t.Fatalf("Delete: %v", err)
	}
	free = 1 << 40
	if _, err := s.GetArticle(context.Background(), "x", "huge"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the refused record: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir, ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n, probs, err := s.Verify(context.Background(), nil); err != nil || len(probs) != 0 || n < 50 {
		t.Fatalf("after the refusals: %d records, %v, %v", n, probs, err)
	}
}

// Read-only opens run side by side (lcl store ls while lcl store export
// runs); a writer is refused while a reader holds the store.
func TestReadOnlyOpensShare(t *testing.T) {
	dir := sample(t)
	_, out, in := helper(t, "holdro", dir)
	waitLine(t, out, "ready")
	s, err := Open(dir, ReadOnly())
	if err != nil {
		t.Fatalf("a second read-only open: %v", err)
	}
	if es, err := s.List(context.Background(), ""); err != nil || len(es) != 51 {
		t.Fatalf("List: %d, %v", len(es), err)
	}
	s.Close()
	if _, err := Open(dir); !errors.Is(err, ErrLocked) {
		t.Fatalf("a writer beside a reader: %v", err)
	}
	in.Close()
	if _, err := Open(filepath.Join(t.TempDir(), "none"), ReadOnly()); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "no store in ") {
		t.Fatalf("read-only open of an empty folder: %v", err)
	}
}

// WaitLocked waits for a store in use for as long as it was given, then
// fails with ErrLocked; a store released in time opens.
func TestWaitLocked(t *testing.T) {
	dir := sample(t)
	held, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := Open(dir, ReadOnly(), WaitLocked(200*time.Millisecond)); !errors.Is(err, ErrLocked) {
		t.Fatalf("store held throughout: %v, want ErrLocked", err)
	}
	if took := time.Since(start); took < 200*time.Millisecond {
		t.Errorf("gave up after %v, want the 200ms it was given", took)
	}
	go func() {
		time.Sleep(200 * time.Millisecond)
		held.Close()
	}()
	s, err := Open(dir, WaitLocked(time.Minute))
	if err != nil {
		t.Fatalf("store released while waiting: %v", err)
	}
	s.Close()
}

// FuzzDecode: no stored value panics decoding or allocates what a damaged
// header claims; an accepted value re-encodes to itself.
func FuzzDecode(f *testing.F) {
	good, _ := encode(KindMatrix, map[string]string{"a": "b"}, []float32{1, 2, 3})
	f.Add(good)
	f.Add((manifest{total: 10, chunkSize: 4, chunks: 3, gen: strings.Repeat("a", genLen)}).encode())
	f.Add([]byte("LCLS\x01\x00\x03\x00"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var meta map[string]any
		if data, err := decode([]byte("k"), KindMatrix, raw, &meta); err == nil && len(raw) < 4*len(data) {
			t.Fatalf("%d floats from %d bytes", len(data), len(raw))
		}
		decodeManifest([]byte("k"), raw)
	})
}
