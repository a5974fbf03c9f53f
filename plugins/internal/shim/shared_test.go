package shim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-plugin"

	"github.com/lcl-project/lcl/internal/f32"
	sdk "github.com/lcl-project/lcl/plugins/internal/api"
	pb "github.com/lcl-project/lcl/plugins/proto"
)

// Over a connection with a matrix folder, a similarity larger than the
// limit reaches Begin whole, Fill targets come back whole, a source's
// large matrix too, and every file the host read is gone.
func TestSharedRoundTrip(t *testing.T) {
	rec := &recorder{}
	src := &constSource{}
	client, server := plugin.TestPluginGRPCConn(t, false, PluginSet(rec, src))
	defer client.Close()
	defer server.Stop()
	raw, err := client.Dispense(KindStrategy)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	raw.(*StrategyClient).Share(Sharing{Dir: dir, Limit: 64})
	st := raw.(sdk.Strategy)
	ctx := context.Background()
	const c = 30
	sim := sdk.NewMatrix(c, c)
	for i := range sim.Data {
		sim.Data[i] = float32(i) / 900
	}
	run := sdk.Run{Classes: make([]sdk.Class, c), Similarity: sim}
	if _, err := st.Begin(ctx, run); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rec.run.Similarity, sim) {
		t.Fatal("Begin's similarity arrived changed")
	}
	rec.plan = &sdk.Plan{Targets: sdk.NewRowMatrix(c, c, func(i int, dst []float32) {
		for j := range dst {
			dst[j] = float32(i*c + j)
		}
	}), Coefs: sdk.Coefs{SoftCE: 1}}
	p, err := st.Plan(ctx, sdk.PlanAt{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Targets.Data) != c*c || p.Targets.Data[c*c-1] != c*c-1 || p.Targets.Data[31] != 31 {
		t.Fatalf("targets %v", p.Targets)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("%d files left in the matrix folder", len(left))
	}
	raw, err = client.Dispense(KindSimilarity)
	if err != nil {
		t.Fatal(err)
	}
	raw.(*SourceClient).Share(Sharing{Dir: dir, Limit: 64})
	src.out = sim
	m, err := raw.(sdk.SimilaritySource).Compute(ctx, sdk.SimilarityRequest{})
	if err != nil || !reflect.DeepEqual(m, sim) {
		t.Fatalf("Compute: %v", err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("%d files left in the matrix folder", len(left))
	}
}

// The host reads a plugin's shared file only from its own matrix folder,
// only a regular file of the right size whose digest matches, and then
// removes it; a file elsewhere is neither read nor removed.
func TestDecodeSharedRefuses(t *testing.T) {
	dir := t.TempDir()
	other := t.TempDir()
	vals := []float32{1, 2, 3, 4}
	write := func(d, name string, b []byte) string {
		p := filepath.Join(d, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := f32.Bytes(vals)
	sum := sha256.Sum256(good)
	sha := "sha256:" + hex.EncodeToString(sum[:])
	outside := write(other, "m.f32", good)
	link := filepath.Join(dir, "link.f32")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, digest string
		rows               int
		want               string
	}{
		{"outside", outside, sha, 2, "is not a file of the matrix folder"},
		{"dotdot", filepath.Join(dir, "..", filepath.Base(other), "m.f32"), sha, 2, "is not a file of the matrix folder"},
		{"relative", "m.f32", sha, 2, "is not a file of the matrix folder"},
		{"symlink", link, sha, 2, "want 16 for 2×2 float32"},
		{"size", write(dir, "short.f32", good[:12]), sha, 2, "12 bytes"},
		{"digest", write(dir, "bad.f32", good), "crc32c:00000000", 2, "digest"},
		{"algorithm", write(dir, "alg.f32", good), "md5:00", 2, "want crc32c:"},
		{"shape", write(dir, "shape.f32", good), sha, -1, "shape"},
	} {
		_, err := decodeMatrix(&pb.Matrix{Rows: int32(tc.rows), Cols: 2, Shared: &pb.SharedMatrix{Path: tc.path, Digest: tc.digest}}, dir, true)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, err := os.Stat(outside); err != nil {
		t.Fatalf("the file outside the folder was touched: %v", err)
	}
	ok := write(dir, "ok.f32", good)
	m, err := decodeMatrix(&pb.Matrix{Rows: 2, Cols: 2, Shared: &pb.SharedMatrix{Path: ok, Digest: sha}}, dir, true)
	if err != nil || !reflect.DeepEqual(m.Data, vals) {
		t.Fatalf("good file: %v, %v", m, err)
	}
	if _, err := os.Stat(ok); !os.IsNotExist(err) {
		t.Fatalf("a read file stays: %v", err)
	}
	if _, err := decodeMatrix(&pb.Matrix{Rows: 2, Cols: 2, Shared: &pb.SharedMatrix{Path: ok, Digest: sha}}, "", true); err == nil {
		t.Fatal("a shared matrix without a host folder was accepted")
	}
}

// A Fill matrix is written in row order however its blocks finish, and a
// failed write stops it.
func TestEachRowBlockKeepsOrder(t *testing.T) {
	const rows, cols = 1000, 7
	m := sdk.NewRowMatrix(rows, cols, func(i int, dst []float32) {
		if i%(3*fillBlock) == 0 {
			time.Sleep(2 * time.Millisecond) // some blocks finish late
		}
		for j := range dst {
			dst[j] = float32(i*cols + j)
		}
	})
	var got []float32
	if err := eachRowBlock(m, func(b []float32) error { got = append(got, b...); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != rows*cols {
		t.Fatalf("%d values", len(got))
	}
	for k, x := range got {
		if x != float32(k) {
			t.Fatalf("value %d is %v", k, x)
		}
	}
	n := 0
	err := eachRowBlock(m, func([]float32) error {
		if n++; n == 3 {
			return os.ErrClosed
		}
		return nil
	})
	if err != os.ErrClosed || n != 3 {
		t.Fatalf("after a failed write: %v, %d writes", err, n)
	}
}
