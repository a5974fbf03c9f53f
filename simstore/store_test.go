package simstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	badger "github.com/dgraph-io/badger/v4"
)

func withChunkSize(n int) Option { return func(o *options) { o.chunkSize = n } }

func withSchema(v int, ms ...migration) Option {
	return func(o *options) { o.schema, o.migrations = v, ms }
}

func testStore(t *testing.T, opts ...Option) *Store {
	t.Helper()
	s, err := Open(t.TempDir(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// countPrefix counts the keys under a raw prefix (chunks, pending marks).
func countPrefix(t *testing.T, s *Store, prefix string) int {
	t.Helper()
	n := 0
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte(prefix)})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func squareMatrix(n int, f func(i int) float32) Matrix {
	m := Matrix{LabelSet: "toy", Kind: "visual", Data: make([]float32, n*n),
		Provenance: Provenance{Params: map[string]string{"n": "x"}}}
	for i := range n {
		m.Classes = append(m.Classes, "c"+strings.Repeat("x", i%3)+string(rune('a'+i%26)))
	}
	for i := range m.Data {
		m.Data[i] = f(i)
	}
	return m
}

func sameBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

func TestMatrixRoundTripIsBitIdentical(t *testing.T) {
	special := []float32{1, float32(math.Pi), float32(math.Copysign(0, -1)), math.SmallestNonzeroFloat32, 0.1, 1, 1e-30, float32(math.NaN()), float32(math.Inf(-1))}
	tests := []struct {
		name string
		opts []Option
		m    Matrix
	}{
		{"3x3 special values", nil, Matrix{LabelSet: "toy", Kind: "visual", Classes: []string{"a", "b", "c"}, Data: special}},
		{"1000x1000 on disk", nil, squareMatrix(1000, func(i int) float32 { return float32(i%1013) / 7 })},
		{"1000x1000 in memory", []Option{InMemory()}, squareMatrix(1000, func(i int) float32 { return float32(i%1013) / 7 })},
		{"chunked on disk", []Option{withChunkSize(64 << 10)}, squareMatrix(300, func(i int) float32 { return float32(i) })},
		{"chunked in memory", []Option{InMemory(), withChunkSize(64 << 10)}, squareMatrix(300, func(i int) float32 { return -float32(i) })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := testStore(t, tt.opts...)
			ctx := context.Background()
			key, err := s.PutMatrix(ctx, tt.m)
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.GetMatrixByKey(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			if !sameBits(got.Data, tt.m.Data) || strings.Join(got.Classes, ",") != strings.Join(tt.m.Classes, ",") {
				t.Fatalf("read back differs from what was written")
			}
			if got.Provenance.Source != "visual" || got.Provenance.CreatedAt.IsZero() {
				t.Errorf("provenance defaults not filled: %+v", got.Provenance)
			}
			entries, err := s.List(ctx, KindMatrix)
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != 1 || entries[0].Key != key || entries[0].Size < int64(4*len(tt.m.Data)) {
				t.Fatalf("List = %+v, want one entry %s of at least %d bytes", entries, key, 4*len(tt.m.Data))
			}
		})
	}
}

func TestGetMatrixOtherParamsNotFound(t *testing.T) {
	s := testStore(t, InMemory())
	ctx := context.Background()
	m := squareMatrix(2, func(i int) float32 { return 1 })
	if _, err := s.PutMatrix(ctx, m); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetMatrix(ctx, "toy", "visual", map[string]string{"n": "y"}, nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("other params: %v, want ErrNotFound", err)
	}
	if got, err := s.GetMatrix(ctx, "toy", "visual", m.Provenance.Params, nil); err != nil || got.N() != 2 {
		t.Fatalf("same params: %v, %v", got, err)
	}
}

func TestRecordsOfEveryKind(t *testing.T) {
	s := testStore(t, InMemory())
	ctx := context.Background()
	if err := s.PutArticles(ctx, Article{LabelSet: "toy", ClassID: "a", Title: "A", Text: "about a"}, Article{LabelSet: "toy", ClassID: "b", Text: "about b"}); err != nil {
		t.Fatal(err)
	}
	v := Vectors{LabelSet: "toy", Model: "d2v", IDs: []string{"a", "b"}, Dim: 3, Data: []float32{1, 2, 3, 4, 5, 6}}
	if err := s.PutVectors(ctx, v); err != nil {
		t.Fatal(err)
	}
	if err := s.PutRun(ctx, Run{ID: "r1", Status: "done", Top1: []float64{0.5}}); err != nil {
		t.Fatal(err)
	}
	key, err := s.PutMatrix(ctx, squareMatrix(2, func(i int) float32 { return 1 }))
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{KindArticle: 2, KindVectors: 1, KindRun: 1, KindMatrix: 1}
	for k, n := range want {
		if info.Counts[k] != n {
			t.Errorf("Info counts %s = %d, want %d", k, info.Counts[k], n)
		}
	}
	if info.SchemaVersion != SchemaVersion {
		t.Errorf("schema %d, want %d", info.SchemaVersion, SchemaVersion)
	}
	tests := []struct {
		key   string
		check func(any) bool
	}{
		{"art/toy/a", func(r any) bool {
			a, ok := r.(*Article)
			return ok && a.Text == "about a" && a.Checksum == textChecksum("about a")
		}},
		{"vec/toy/d2v", func(r any) bool { x, ok := r.(*Vectors); return ok && sameBits(x.Row(1), []float32{4, 5, 6}) }},
		{"run/r1", func(r any) bool { x, ok := r.(*Run); return ok && x.Status == "done" }},
		{key, func(r any) bool { x, ok := r.(*Matrix); return ok && x.At(1, 0) == 1 }},
	}
	for _, tt := range tests {
		r, err := s.Record(ctx, tt.key)
		if err != nil || !tt.check(r) {
			t.Errorf("Record(%s) = %+v, %v", tt.key, r, err)
		}
	}
	if _, err := s.Record(ctx, "meta/schema"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Record(meta/schema) = %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx, "run/r1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetRun(ctx, "r1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("after Delete: %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx, "run/r1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("second Delete: %v, want ErrNotFound", err)
	}
}

// The acceptance's ImageNet-scale records: 82115 doc2vec vectors of dim 100
// (33 MB) in a store of each kind.
func TestLargeVectorSet(t *testing.T) {
	for _, opts := range [][]Option{nil, {InMemory()}} {
		s := testStore(t, opts...)
		ctx := context.Background()
		n, d := 82115, 100
		v := Vectors{LabelSet: "imagenet21k", Model: "d2v", Dim: d, IDs: make([]string, n), Data: make([]float32, n*d)}
		for i := range v.IDs {
			v.IDs[i] = "n" + string(rune('0'+i%10))
		}
		for i := range v.Data {
			v.Data[i] = float32(i)
		}
		if err := s.PutVectors(ctx, v); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetVectors(ctx, v.LabelSet, v.Model)
		if err != nil {
			t.Fatal(err)
		}
		if !sameBits(got.Data, v.Data) || len(got.IDs) != n {
			t.Fatal("large vector set read back differs")
		}
		if c := countPrefix(t, s, prefixChunk+"/"); c != (len(v.Data)*4+s.chunkSize)/s.chunkSize {
			t.Errorf("%d chunks stored for a %d-byte payload", c, len(v.Data)*4)
		}
	}
}

func TestCorruptValueNamesKey(t *testing.T) {
	ctx := context.Background()
	s := testStore(t, InMemory(), withChunkSize(1<<10))
	small, err := s.PutMatrix(ctx, squareMatrix(3, func(i int) float32 { return float32(i) }))
	if err != nil {
		t.Fatal(err)
	}
	m := squareMatrix(40, func(i int) float32 { return float32(i) })
	m.Kind = "semantic"
	big, err := s.PutMatrix(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	// flip writes the value at key with one byte changed, bypassing the codec.
	flip := func(key []byte, at func(n int) int) {
		t.Helper()
		err := s.db.Update(func(txn *badger.Txn) error {
			item, err := txn.Get(key)
			if err != nil {
				return err
			}
			v, err := item.ValueCopy(nil)
			if err != nil {
				return err
			}
			v[at(len(v))] ^= 0x10
			return txn.SetEntry(badger.NewEntry(key, v).WithMeta(item.UserMeta()))
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	flip([]byte(small), func(n int) int { return n - 3 })
	var chunk0 []byte
	s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte(prefixChunk + "/")})
		defer it.Close()
		it.Rewind()
		chunk0 = it.Item().KeyCopy(nil)
		return nil
	})
	flip(chunk0, func(n int) int { return n / 2 })
	for _, key := range []string{small, big} {
		_, err := s.GetMatrixByKey(ctx, key)
		var ce *CorruptError
		if !errors.As(err, &ce) || ce.Key != key || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), key) {
			t.Errorf("flipped byte in %s: got %v, want a CorruptError naming the key", key, err)
		}
	}
}

// TestCorruptOnDisk flips one byte of a matrix in the value-log file of a
// closed store, as a failing disk would.
func TestCorruptOnDisk(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	const marker = 12345.25
	// 600×600 float32 is 1.4 MB: above Badger's 1 MiB value threshold, so
	// the value sits verbatim in the value log.
	m := squareMatrix(600, func(i int) float32 {
		if i == 1000 {
			return marker
		}
		return 0.5
	})
	key, err := s.PutMatrix(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	pat := binary.LittleEndian.AppendUint32(nil, math.Float32bits(marker))
	files, _ := filepath.Glob(filepath.Join(dir, "*.vlog"))
	flipped := false
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if i := bytes.Index(b, pat); i >= 0 {
			b[i+1] ^= 0x01
			if err := os.WriteFile(f, b, 0o644); err != nil {
				t.Fatal(err)
			}
			flipped = true
		}
	}
	if !flipped {
		t.Fatalf("matrix bytes not found in value log files %v", files)
	}
	s, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.GetMatrixByKey(ctx, key)
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Key != key {
		t.Fatalf("got %v, want a CorruptError naming %s", err, key)
	}
}

func TestTxIsAllOrNothing(t *testing.T) {
	ctx := context.Background()
	s := testStore(t, withChunkSize(4<<10))
	m := squareMatrix(100, func(i int) float32 { return 1 })
	boom := errors.New("boom")
	err := s.Update(ctx, func(tx *Tx) error {
		if _, err := tx.PutMatrix(m); err != nil {
			return err
		}
		if err := tx.PutRun(Run{ID: "r"}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update = %v, want boom", err)
	}
	if entries, _ := s.List(ctx, ""); len(entries) != 0 {
		t.Errorf("after a failed Tx: %+v, want nothing", entries)
	}
	if n := countPrefix(t, s, prefixChunk+"/") + countPrefix(t, s, prefixPending); n != 0 {
		t.Errorf("%d chunk keys left after a failed Tx", n)
	}
	err = s.Update(ctx, func(tx *Tx) error {
		if _, err := tx.PutMatrix(m); err != nil {
			return err
		}
		return tx.PutRun(Run{ID: "r"})
	})
	if err != nil {
		t.Fatal(err)
	}
	if entries, _ := s.List(ctx, ""); len(entries) != 2 {
		t.Errorf("after a committed Tx: %+v, want 2 records", entries)
	}
	// Replacing then deleting a chunked value leaves no chunks behind.
	m.Data[0] = 2
	key, err := s.PutMatrix(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	want := (len(m.Data)*4 + 2000) / (4 << 10)
	if n := countPrefix(t, s, prefixChunk+"/"); n < want || n > want+1 {
		t.Errorf("%d chunks after replacing, want about %d", n, want)
	}
	if err := s.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	if n := countPrefix(t, s, prefixChunk+"/"); n != 0 {
		t.Errorf("%d chunks left after Delete", n)
	}
}

func TestOpenDropsUnfinishedChunks(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, withChunkSize(1<<10))
	if err != nil {
		t.Fatal(err)
	}
	// A crash between writing chunks and committing the manifest.
	enc, err := newEncoding(KindMatrix, map[string]string{}, make([]float32, 1243)) // 4998 bytes
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.writeChunks(context.Background(), enc); err != nil {
		t.Fatal(err)
	}
	if n := countPrefix(t, s, prefixChunk+"/"); n != 5 {
		t.Fatalf("%d chunks written, want 5", n)
	}
	s.Close()
	s, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n := countPrefix(t, s, prefixChunk+"/") + countPrefix(t, s, prefixPending); n != 0 {
		t.Errorf("%d orphaned chunk keys survived Open", n)
	}
}

func TestSchemaVersion(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	s.PutRun(context.Background(), Run{ID: "old"})
	s.Close()

	if _, err := Open(dir, withSchema(3, migration{from: 1, apply: func(*badger.Txn) error { return nil }})); err == nil || !strings.Contains(err.Error(), "cannot upgrade it to 3") {
		t.Fatalf("missing migration 2→3: %v", err)
	}
	// Each step commits on its own: the failed open above already took the
	// store to version 2, so this open runs only step 2→3.
	up := func(from int) migration {
		return migration{from: from, apply: func(txn *badger.Txn) error {
			return txn.Set(runKey("migrated"), mustEncode(t, Run{ID: "migrated", Status: string(rune('0' + from))}))
		}}
	}
	s, err = Open(dir, withSchema(3, up(1), up(2)))
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.GetRun(context.Background(), "migrated")
	if err != nil || r.Status != "2" {
		t.Fatalf("migration 2→3 did not run: %+v %v", r, err)
	}
	if v, _, _ := s.storedSchema(); v != 3 {
		t.Errorf("schema after upgrade = %d, want 3", v)
	}
	s.Close()
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "upgrade lcl") {
		t.Fatalf("older lcl on a newer store: %v, want a refusal", err)
	}
}

func mustEncode(t *testing.T, r Run) []byte {
	t.Helper()
	b, err := encode(KindRun, r, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestUnknownKind(t *testing.T) {
	s := testStore(t, InMemory())
	if _, err := s.List(context.Background(), "movie"); err == nil || !strings.Contains(err.Error(), "movie") {
		t.Fatalf("List(movie) = %v", err)
	}
}

// BenchmarkMatrix1000 writes and reads back an ImageNet-sized matrix (4 MB).
func BenchmarkMatrix1000(b *testing.B) {
	s, err := Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	m := squareMatrix(1000, func(i int) float32 { return float32(i) })
	b.SetBytes(int64(4 * len(m.Data)))
	for b.Loop() {
		key, err := s.PutMatrix(ctx, m)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.GetMatrixByKey(ctx, key); err != nil {
			b.Fatal(err)
		}
	}
}
