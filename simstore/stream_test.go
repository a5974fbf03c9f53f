package simstore

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unsafe"

	badger "github.com/dgraph-io/badger/v4"

	"github.com/lcl-project/lcl/internal/bounded/boundedtest"
	"github.com/lcl-project/lcl/internal/f32"
)

// The stream encoding is the whole-value encoding, and its data pieces are
// the caller's values themselves (no copy) where the machine is
// little-endian.
func TestEncodingPiecesShareTheValues(t *testing.T) {
	m := squareMatrix(300, func(i int) float32 { return float32(i) / 7 })
	e, err := newEncoding(KindMatrix, m, m.Data)
	if err != nil {
		t.Fatal(err)
	}
	whole := e.bytes()
	var got []byte
	const step = 1000 // pieces across the head/data boundary and inside the data
	for off := 0; off < e.len(); off += step {
		p := e.piece(off, min(step, e.len()-off))
		got = append(got, p...)
		if f32.LittleEndian && off >= len(e.head) && unsafe.SliceData(p) != (*byte)(unsafe.Add(unsafe.Pointer(&m.Data[0]), off-len(e.head))) {
			t.Fatalf("piece at %d is a copy, not the values' memory", off)
		}
	}
	if string(got) != string(whole) {
		t.Fatal("pieces differ from the whole encoding")
	}
	var back Matrix
	data, err := decode([]byte("k"), KindMatrix, whole, &back)
	if err != nil || !sameBits(data, m.Data) || back.N() != 300 {
		t.Fatalf("decode: %v", err)
	}
}

// Decoding piece by piece allocates the values once (plus the meta), not
// the value and then the values.
func TestDecoderAllocatesTheValuesOnce(t *testing.T) {
	m := squareMatrix(1000, func(i int) float32 { return float32(i % 977) })
	e, err := newEncoding(KindMatrix, m, m.Data)
	if err != nil {
		t.Fatal(err)
	}
	pieces := [][]byte{}
	for off := 0; off < e.len(); off += 1 << 16 {
		pieces = append(pieces, e.piece(off, min(1<<16, e.len()-off)))
	}
	var data []float32
	boundedtest.MaxAlloc(t, 4*1000*1000+1<<20, "decoding a 4 MB matrix in pieces", func() {
		d, err := newDecoder([]byte("k"), KindMatrix, e.len())
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pieces {
			if err := d.write(p); err != nil {
				t.Fatal(err)
			}
		}
		var back Matrix
		if data, err = d.finish(&back); err != nil {
			t.Fatal(err)
		}
	})
	if !sameBits(data, m.Data) {
		t.Fatal("decoded values differ")
	}
}

// A matrix whose meta spans several chunks reads back whole; MatrixInfo
// reads the meta alone; LatestMatrix returns the newest.
func TestChunkedMetaAndLatest(t *testing.T) {
	for _, opts := range [][]Option{{InMemory(), withChunkSize(1 << 10)}, {withChunkSize(1 << 10)}} {
		s := testStore(t, opts...)
		ctx := context.Background()
		old := squareMatrix(200, func(i int) float32 { return 1 })
		for i := range old.Classes {
			old.Classes[i] += strings.Repeat("-long-class-id", 3) // meta of about 12 KB: 12 chunks
		}
		old.Provenance.CreatedAt = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
		if _, err := s.PutMatrix(ctx, old); err != nil {
			t.Fatal(err)
		}
		newer := squareMatrix(200, func(i int) float32 { return float32(i) })
		newer.Classes = old.Classes
		newer.Provenance.Params = map[string]string{"n": "y"}
		newer.Provenance.CreatedAt = old.Provenance.CreatedAt.Add(time.Hour)
		key, err := s.PutMatrix(ctx, newer)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.MatrixInfo(ctx, key)
		if err != nil || info.Data != nil || info.N() != 200 || info.Classes[199] != newer.Classes[199] || info.Provenance.Params["n"] != "y" {
			t.Fatalf("MatrixInfo: %+v, %v", info, err)
		}
		got, err := s.LatestMatrix(ctx, "toy", "visual")
		if err != nil || !sameBits(got.Data, newer.Data) || !got.Provenance.CreatedAt.Equal(newer.Provenance.CreatedAt) {
			t.Fatalf("LatestMatrix: %v", err)
		}
		if _, err := s.MatrixInfo(ctx, "sim/toy/visual/none"); !errors.Is(err, ErrNotFound) {
			t.Errorf("MatrixInfo of a missing key: %v", err)
		}
	}
}

// A damaged manifest that claims far more bytes than its chunks hold is
// refused before anything is allocated for them.
func TestManifestClaimingMoreIsRefusedCheaply(t *testing.T) {
	s := testStore(t, InMemory(), withChunkSize(1<<10))
	ctx := context.Background()
	key, err := s.PutMatrix(ctx, squareMatrix(40, func(i int) float32 { return 1 }))
	if err != nil {
		t.Fatal(err)
	}
	err = s.db.Update(func(txn *badger.Txn) error {
		item, err := txn.Get([]byte(key))
		if err != nil {
			return err
		}
		raw, _ := item.ValueCopy(nil)
		m, err := decodeManifest([]byte(key), raw)
		if err != nil {
			return err
		}
		m.total = MaxValueSize - 1 // and a chunk count to match
		m.chunkSize = 1 << 30
		m.chunks = 2
		return txn.SetEntry(badger.NewEntry([]byte(key), m.encode()).WithMeta(userMetaChunked))
	})
	if err != nil {
		t.Fatal(err)
	}
	boundedtest.MaxAlloc(t, 1<<20, "reading a manifest that claims 2 GB", func() {
		_, err = s.GetMatrixByKey(ctx, key)
	})
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Key != key {
		t.Fatalf("got %v, want a CorruptError naming %s", err, key)
	}
}
