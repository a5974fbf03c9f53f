package shim

import (
	"context"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/go-plugin"

	sdk "github.com/lcl-project/lcl/plugins/internal/api"
)

// recorder returns canned answers and records what it was sent.
type recorder struct {
	plan   *sdk.Plan
	run    sdk.Run
	chunks []*sdk.FeatureChunk
	m      sdk.Metrics
}

func (r *recorder) Describe(context.Context) (sdk.StrategyInfo, error) {
	return sdk.StrategyInfo{Name: "rec", Version: "1", Params: []sdk.Param{{Name: "p", Type: "int", Default: "3", Help: "h"}},
		MaxPeers: 2, Stages: []string{"a", "b"}, NeedsSimilarity: true}, nil
}

func (r *recorder) Begin(_ context.Context, run sdk.Run) ([]sdk.Stage, error) {
	r.run = run
	return []sdk.Stage{{Name: "a", Epochs: 2, Peers: 1, Teacher: -1, Fresh: true, Features: true},
		{Name: "b", Epochs: 3, Peers: 2, Teacher: 0, PerStep: true, Model: "resnet18",
			Levels: []sdk.Level{{Groups: 2, Group: []int{0, 1}}}}}, nil
}

func (r *recorder) Plan(_ context.Context, at sdk.PlanAt) (*sdk.Plan, error) {
	if at.Epoch == 9 {
		return nil, errors.New("no epoch 9")
	}
	return r.plan, nil
}

func (r *recorder) Observe(_ context.Context, m sdk.Metrics) error { r.m = m; return nil }

func (r *recorder) Features(_ context.Context, s sdk.FeatureStream) error {
	for {
		c, err := s.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		r.chunks = append(r.chunks, c)
	}
}

type constSource struct {
	got sdk.SimilarityRequest
	out *sdk.Matrix // nil: 1×1
}

func (s *constSource) Describe(context.Context) (sdk.SourceInfo, error) {
	return sdk.SourceInfo{Name: "const", NeedsAttributes: true}, nil
}

func (s *constSource) Compute(_ context.Context, req sdk.SimilarityRequest) (*sdk.Matrix, error) {
	s.got = req
	if s.out != nil {
		return s.out, nil
	}
	return &sdk.Matrix{Rows: 1, Cols: 1, Data: []float32{1}}, nil
}

func TestRoundTrip(t *testing.T) {
	rec := &recorder{}
	src := &constSource{}
	client, server := plugin.TestPluginGRPCConn(t, false, PluginSet(rec, src))
	defer client.Close()
	defer server.Stop()
	raw, err := client.Dispense(KindStrategy)
	if err != nil {
		t.Fatal(err)
	}
	st := raw.(sdk.Strategy)
	ctx := context.Background()

	info, err := st.Describe(ctx)
	if want, _ := rec.Describe(ctx); err != nil || !reflect.DeepEqual(info, want) {
		t.Fatalf("Describe = %+v, %v; want %+v", info, err, want)
	}
	run := sdk.Run{Classes: []sdk.Class{{Index: 0, ID: "x", Name: "ex", WNID: "n1"}, {Index: 1, ID: "y"}},
		Similarity: &sdk.Matrix{Rows: 2, Cols: 2, Data: []float32{1, .5, .5, 1}}, NumExamples: 3, Labels: []int{0, 1, 1},
		Epochs: 4, StepsPerEpoch: 10, Model: "m", Params: map[string]string{"p": "4"}}
	stages, err := st.Begin(ctx, run)
	if want, _ := rec.Begin(ctx, run); err != nil || !reflect.DeepEqual(stages, want) {
		t.Fatalf("Begin = %+v, %v", stages, err)
	}
	if !reflect.DeepEqual(rec.run, run) {
		t.Fatalf("plugin got run %+v, want %+v", rec.run, run)
	}
	plans := []*sdk.Plan{
		{Coefs: sdk.Coefs{SoftCE: 1}},
		{Targets: &sdk.Matrix{Rows: 2, Cols: 2, Data: []float32{.9, .1, .2, .8}}, Weights: []float64{1, .5, 0},
			Subset: []int{2, 0}, Coefs: sdk.Coefs{SoftCE: .1, HardCE: .2, KD: .9, KDTemperature: 4, Mutual: 1}},
		{Subset: []int{}, Coefs: sdk.Coefs{SoftCE: 1}}, // an empty subset stays empty, not "all"
		{Coefs: sdk.Coefs{HardCE: .5, Group: 1}, Groups: &sdk.Groups{Members: [][]int{{1}, {0, 1}},
			Weights: []sdk.GroupWeight{{Class: 1, Group: 0, W: .7}, {Class: 1, Group: 1, W: -.2}, {Class: 0, Group: 1, W: .5}}}},
	}
	for i, want := range plans {
		rec.plan = want
		got, err := st.Plan(ctx, sdk.PlanAt{Stage: 1, Epoch: 2, Step: 3})
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("plan %d = %+v, %v; want %+v", i, got, err, want)
		}
	}
	if _, err := st.Plan(ctx, sdk.PlanAt{Epoch: 9}); err == nil || !strings.Contains(err.Error(), "no epoch 9") {
		t.Fatalf("plan error = %v", err)
	}
	m := sdk.Metrics{Stage: 1, Epoch: 2, Peer: 1, Values: map[string]float64{"top1": 0.5}}
	if err := st.Observe(ctx, m); err != nil || !reflect.DeepEqual(rec.m, m) {
		t.Fatalf("Observe: %v, plugin got %+v", err, rec.m)
	}
	chunks := sdk.ChunkSlice{
		{Dim: 2, Indices: []int{0, 2}, Data: []float32{1, 2, 3, 4}},
		{Dim: 2, Indices: []int{1}, Data: []float32{5, 6}},
	}
	want := append(sdk.ChunkSlice(nil), chunks...)
	if err := st.Features(ctx, &chunks); err != nil || !reflect.DeepEqual(sdk.ChunkSlice(rec.chunks), want) {
		t.Fatalf("Features: %v, plugin got %v", err, rec.chunks)
	}

	raw, err = client.Dispense(KindSimilarity)
	if err != nil {
		t.Fatal(err)
	}
	s := raw.(sdk.SimilaritySource)
	req := sdk.SimilarityRequest{LabelSet: "ls", Classes: run.Classes, Params: map[string]string{"k": "v"},
		Hierarchy:  []sdk.Node{{ID: "root", Name: "Root"}, {ID: "x", Name: "ex", Parent: "root"}},
		Attributes: []sdk.Attributes{{Name: "binary", Names: []string{"a", "b"}, Values: &sdk.Matrix{Rows: 2, Cols: 2, Data: []float32{1, 0, 0, 1}}}}}
	if mat, err := s.Compute(ctx, req); err != nil || mat.Rows != 1 || !reflect.DeepEqual(src.got, req) {
		t.Fatalf("Compute = %+v, %v; plugin got %+v", mat, err, src.got)
	}
}
