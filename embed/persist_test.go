package embed

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/internal/bounded/boundedtest"
)

func trainedModel(t *testing.T) *Model {
	t.Helper()
	o := DefaultOptions()
	o.Dim, o.Epochs, o.MinCount, o.Workers = 8, 2, 1, 1
	m, _, err := Train(context.Background(), topicCorpus(), o)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestModelSaveLoad(t *testing.T) {
	m := trainedModel(t)
	path := filepath.Join(t.TempDir(), "m.d2v")
	if err := m.Save(path); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.WordVecs, m.WordVecs) || !slices.Equal(got.OutVecs, m.OutVecs) ||
		!slices.Equal(got.DocVecs, m.DocVecs) || !slices.Equal(got.Tags, m.Tags) ||
		!slices.Equal(got.Vocab.Words, m.Vocab.Words) || !slices.Equal(got.Vocab.Counts, m.Vocab.Counts) {
		t.Fatal("loaded model differs from the saved one")
	}
	if got.Options.Mode != m.Options.Mode || got.Options.Dim != m.Options.Dim || got.Options.Sample != m.Options.Sample {
		t.Errorf("options %+v, want %+v", got.Options, m.Options)
	}
	// The loaded model infers exactly as the original.
	a, _ := m.Infer([]string{"cat", "the", "dog"}, InferOptions{Seed: 9})
	b, _ := got.Infer([]string{"cat", "the", "dog"}, InferOptions{Seed: 9})
	if !slices.Equal(a, b) {
		t.Error("loaded model infers differently")
	}
	if v, ok := got.DocVector("d7"); !ok || !slices.Equal(v, m.DocVecs[7*8:8*8]) {
		t.Error("DocVector after load")
	}
	// No temporary files left.
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
		t.Errorf("directory holds %d entries, want only the model", len(ents))
	}
}

func TestModelLoadCorrupt(t *testing.T) {
	m := trainedModel(t)
	var buf bytes.Buffer
	if err := m.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	flip := append([]byte(nil), good...)
	flip[len(flip)/2] ^= 1
	badMagic := append([]byte("NOTAMODL"), good[8:]...)
	badVersion := append([]byte(nil), good...)
	badVersion[7] = 99
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "offset 0"},
		{"truncated header", good[:20], "header"},
		{"truncated vectors", good[:len(good)-100], "unexpected EOF"},
		{"no checksum", good[:len(good)-4], "checksum"},
		{"bit flip", flip, "checksum"},
		{"magic", badMagic, "magic"},
		{"version", badVersion, "format version 99"},
		{"trailing", append(append([]byte(nil), good...), 0), "trailing"},
	}
	for _, tt := range tests {
		_, err := ReadModel(bytes.NewReader(tt.data))
		if !errors.Is(err, ErrBadModel) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want ErrBadModel mentioning %q", tt.name, err, tt.want)
		}
	}
}

func TestWord2VecRoundTrip(t *testing.T) {
	v := &Vectors{Keys: []string{"cat", "dog", "ENTITY/Great_white_shark", "café"}, Dim: 3, Data: []float32{
		0.1, -0.2, 3e-8,
		1, 2, 3,
		-1.5, 0, 1e10,
		0.33333334, -0, 7,
	}}
	for _, bin := range []bool{false, true} {
		var buf bytes.Buffer
		if err := WriteWord2Vec(&buf, v, bin); err != nil {
			t.Fatal(err)
		}
		if isBinaryWord2Vec(buf.Bytes()) != bin {
			t.Errorf("binary=%v: format detected as binary=%v", bin, !bin)
		}
		got, err := ReadWord2Vec(&buf, bin)
		if err != nil {
			t.Fatalf("binary=%v: %v", bin, err)
		}
		if !slices.Equal(got.Keys, v.Keys) || !slices.Equal(got.Data, v.Data) || got.Dim != 3 {
			t.Errorf("binary=%v: round trip gave %v %v", bin, got.Keys, got.Data)
		}
	}
	// File round trip of a trained model's vectors, with detection.
	m := trainedModel(t)
	for _, bin := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "v")
		if err := SaveWord2Vec(path, m.WordVectors(), bin); err != nil {
			t.Fatal(err)
		}
		got, isBin, err := LoadWord2Vec(path)
		if err != nil || isBin != bin {
			t.Fatalf("binary=%v: LoadWord2Vec: binary=%v, %v", bin, isBin, err)
		}
		if !slices.Equal(got.Data, m.WordVecs) {
			t.Errorf("binary=%v: vectors differ after round trip", bin)
		}
	}
}

func TestWord2VecErrors(t *testing.T) {
	bin := func(parts ...string) string { return strings.Join(parts, "") }
	f32 := "\x00\x00\x80\x3f" // 1.0
	tests := []struct {
		name   string
		data   string
		binary bool
		want   string
	}{
		{"empty", "", false, "line 1: header"},
		{"bad header", "three 2\n", false, "line 1: header"},
		{"one field header", "3\n", false, "line 1: header"},
		{"too few values", "2 3\na 1 2 3\nb 1 2\n", false, "line 3: 3 fields"},
		{"too many values", "1 2\na 1 2 3\n", false, "line 2: 4 fields"},
		{"not a number", "2 2\na 1 2\nb 1 x\n", false, `line 3: value 2 "x"`},
		{"truncated", "3 2\na 1 2\nb 1 2\n", false, "line 4: record 3 of 3"},
		{"duplicate", "2 1\na 1\na 2\n", false, `line 3: duplicate key "a"`},
		{"extra records", "1 1\na 1\nb 2\n", false, "line 3: data after"},
		{"binary truncated vector", bin("2 2\n", "a ", f32, f32, "\n", "b ", f32, "\x00\x00"), true, "offset 17: vector of \"b\": 6 of 8 bytes"},
		{"binary missing record", bin("2 2\n", "a ", f32, f32, "\n"), true, "offset 15: key of record 2 of 2"},
		{"binary header", "x\n", true, "line 1: header"},
		{"binary duplicate", bin("2 1\n", "a ", f32, "\n", "a ", f32), true, `offset 11: duplicate key "a"`},
	}
	for _, tt := range tests {
		_, err := ReadWord2Vec(strings.NewReader(tt.data), tt.binary)
		if !errors.Is(err, ErrBadVectors) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want ErrBadVectors mentioning %q", tt.name, err, tt.want)
		}
	}
}

func TestMeanWordVector(t *testing.T) {
	m := FromWordVectors(&Vectors{Keys: []string{"a", "b"}, Dim: 2, Data: []float32{1, 2, 3, 6}})
	v, n := m.MeanWordVector([]string{"a", "b", "b", "zzz"})
	if n != 3 || math.Abs(float64(v[0])-7.0/3) > 1e-6 || math.Abs(float64(v[1])-14.0/3) > 1e-6 {
		t.Errorf("MeanWordVector = %v, %d; want [7/3 14/3], 3", v, n)
	}
	if _, err := m.Infer([]string{"a"}, InferOptions{}); err == nil {
		t.Error("Infer on word-vector-only model: no error")
	}
	got, err := m.Vector("x", []string{"a"}, InferOptions{})
	if err != nil || !slices.Equal(got, []float32{1, 2}) {
		t.Errorf("Vector = %v, %v; want mean word vector [1 2]", got, err)
	}
}

// The audit's crafted word2vec files: a header announcing 2^20 vectors of
// dimension 2^16 (256 GiB) in a 34-byte file fails at the missing records,
// having allocated kilobytes.
func TestWord2VecCraftedHeader(t *testing.T) {
	for _, bin := range []bool{true, false} {
		in := "1048576 65536\n" + "ab " + strings.Repeat("\x00", 16)
		if !bin {
			in = "1048576 65536\nab 1 2 3\n"
		}
		var err error
		boundedtest.MaxAlloc(t, 4<<20, "reading a 34-byte word2vec file", func() {
			_, err = ReadWord2Vec(strings.NewReader(in), bin)
		})
		if !errors.Is(err, ErrBadVectors) {
			t.Errorf("binary=%v: err = %v", bin, err)
		}
	}
	_, err := ReadWord2Vec(strings.NewReader("1 65537\n"), false)
	if err == nil || !strings.Contains(err.Error(), "line 1: header") {
		t.Errorf("dimension above the limit: %v", err)
	}
}

// A model file whose header names an absurd dimension, or counts that the
// file cannot hold, is refused without allocating what it announces.
func TestModelCraftedSizes(t *testing.T) {
	craft := func(dim int, nv uint32) []byte {
		var b bytes.Buffer
		b.WriteString(modelMagic)
		b.WriteByte(modelVersion)
		o := DefaultOptions()
		o.Dim = dim
		hdr, _ := json.Marshal(o)
		binary.Write(&b, binary.LittleEndian, uint32(len(hdr)))
		b.Write(hdr)
		binary.Write(&b, binary.LittleEndian, nv)
		b.Write([]byte{1, 'a', 1}) // one word; the others are missing
		return b.Bytes()
	}
	for _, c := range []struct {
		name string
		in   []byte
		want string
	}{
		{"dimension 2^40", craft(1<<40, 1), "dim 1099511627776: want 1 to 65536"},
		{"4 billion words announced", craft(100, 1<<32-1), "word 1"},
	} {
		var err error
		boundedtest.MaxAlloc(t, 4<<20, c.name, func() { _, err = ReadModel(bytes.NewReader(c.in)) })
		if !errors.Is(err, ErrBadModel) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
}

// FuzzReadWord2Vec: no input panics; accepted vectors are consistent.
func FuzzReadWord2Vec(f *testing.F) {
	f.Add([]byte("2 3\na 1 2 3\nb 4 5 6\n"), false)
	f.Add([]byte("1 1\nab \x00\x00\x80\x3f\n"), true)
	f.Add([]byte("1048576 65536\nab \x00\x00\x00\x00"), true)
	f.Add([]byte("2 1\na 1\na 2\n"), false)
	f.Fuzz(func(t *testing.T, in []byte, bin bool) {
		v, err := ReadWord2Vec(bytes.NewReader(in), bin)
		if err != nil {
			if !errors.Is(err, ErrBadVectors) {
				t.Fatalf("error without ErrBadVectors: %v", err)
			}
			return
		}
		if len(v.Data) != len(v.Keys)*v.Dim {
			t.Fatalf("%d keys of dimension %d but %d values", len(v.Keys), v.Dim, len(v.Data))
		}
	})
}

// FuzzReadModel: no input panics or allocates beyond its size.
func FuzzReadModel(f *testing.F) {
	m := FromWordVectors(&Vectors{Keys: []string{"a", "b"}, Dim: 2, Data: []float32{1, 2, 3, 4}})
	var buf bytes.Buffer
	if err := m.Encode(&buf); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte(modelMagic + "\x01\x02\x00\x00\x00{}"))
	f.Fuzz(func(t *testing.T, in []byte) {
		_, err := ReadModel(bytes.NewReader(in))
		if err != nil && !errors.Is(err, ErrBadModel) {
			t.Fatalf("error without ErrBadModel: %v", err)
		}
	})
}

// Assemble puts a model back together from its parts (as lcl's store keeps
// it): the result infers as the original does; parts of the wrong size are
// refused, naming the part.
func TestAssemble(t *testing.T) {
	m := trainedModel(t)
	words := m.Vocab.Words[:3]
	want, err := m.Infer(words, InferOptions{Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	a, err := Assemble(m.Options, m.Vocab.Words, m.Vocab.Counts, m.Tags, m.WordVecs, m.OutVecs, m.DocVecs)
	if err != nil {
		t.Fatal(err)
	}
	got, err := a.Infer(words, InferOptions{Seed: 4})
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("assembled model infers %v (%v), the original %v", got, err, want)
	}
	if v, ok := a.DocVector(m.Tags[1]); !ok || !slices.Equal(v, m.DocVecs[m.Options.Dim:2*m.Options.Dim]) {
		t.Errorf("document vector of %s lost", m.Tags[1])
	}
	d := m.Options.Dim
	for _, tt := range []struct {
		name                  string
		counts                []int64
		wordVecs, out, docVec []float32
		want                  string
	}{
		{"counts", m.Vocab.Counts[1:], m.WordVecs, m.OutVecs, m.DocVecs, "counts"},
		{"word vectors", m.Vocab.Counts, m.WordVecs[d:], m.OutVecs, m.DocVecs, "word vectors"},
		{"output weights", m.Vocab.Counts, m.WordVecs, m.OutVecs[d:], m.DocVecs, "output weights"},
		{"document vectors", m.Vocab.Counts, m.WordVecs, m.OutVecs, m.DocVecs[d:], "document vectors"},
	} {
		if _, err := Assemble(m.Options, m.Vocab.Words, tt.counts, m.Tags, tt.wordVecs, tt.out, tt.docVec); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s of the wrong size: %v", tt.name, err)
		}
	}
}
