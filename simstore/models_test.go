package simstore

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestModelRoundTrip(t *testing.T) {
	ctx := context.Background()
	s, err := Open("", InMemory())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// More values than one in-memory chunk: the record is chunked.
	data := make([]float32, 300_000)
	for i := range data {
		data[i] = float32(i) / 7
	}
	m := Model{ID: "doc2vec-x/y", Meta: map[string]string{"corpus": "c"}, Header: []byte(`{"a":[1,2]}`), Parts: []int{100_000, 0, 200_000}, Data: data}
	if err := s.PutModel(ctx, m); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetModel(ctx, "doc2vec-x/y")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Data, data) || string(got.Header) != `{"a":[1,2]}` || got.Meta["corpus"] != "c" || got.CreatedAt.IsZero() {
		t.Fatalf("read back %+v", got.Meta)
	}
	if p := got.Part(2); len(p) != 200_000 || p[0] != data[100_000] || len(got.Part(1)) != 0 {
		t.Errorf("parts: %d values from %v", len(p), p[:1])
	}
	list, err := s.List(ctx, KindModel)
	if err != nil || len(list) != 1 || list[0].Key != "model/doc2vec-x%2Fy" || list[0].Kind != KindModel {
		t.Fatalf("List(model) = %+v, %v", list, err)
	}
	if rec, err := s.Record(ctx, list[0].Key); err != nil || rec.(*Model).ID != m.ID {
		t.Errorf("Record: %v %v", rec, err)
	}
	newer := Model{ID: "newer", Parts: []int{1}, Data: []float32{1}}
	if err := s.PutModel(ctx, newer); err != nil {
		t.Fatal(err)
	}
	if l, err := s.LatestModel(ctx); err != nil || l.ID != "newer" || l.Data != nil {
		t.Errorf("LatestModel = %+v, %v; want the newer one, without its values", l, err)
	}
	if err := s.Delete(ctx, "model/newer"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetModel(ctx, "other"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing model: %v, want ErrNotFound", err)
	}
	m.Parts = []int{1, 2}
	if err := s.PutModel(ctx, m); err == nil || !strings.Contains(err.Error(), "parts of 3 values, data holds 300000") {
		t.Errorf("parts not adding up: %v", err)
	}
	if err := s.Delete(ctx, list[0].Key); err != nil {
		t.Fatal(err)
	}
	if n, problems, err := s.Verify(ctx, nil); err != nil || n != 0 || len(problems) != 0 {
		t.Errorf("after delete: %d records, %v, %v", n, problems, err)
	}
	if _, err := s.LatestModel(ctx); !errors.Is(err, ErrNotFound) {
		t.Errorf("LatestModel of none: %v, want ErrNotFound", err)
	}
}
