package cli

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/internal/testdep"
	"github.com/lcl-project/lcl/simstore"
)

// fixtureStore writes one record of each kind to a fresh store folder and
// returns the folder and the matrix key.
func fixtureStore(t *testing.T) (dir, matrixKey string) {
	t.Helper()
	dir = t.TempDir()
	s, err := simstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	matrixKey, err = s.PutMatrix(ctx, simstore.Matrix{LabelSet: "toy", Kind: "visual",
		Classes:    []string{"n01", "n02", "n03"},
		Data:       []float32{1, 0.25, 0.1, 0.25, 1, 1e-30, 0.1, 1e-30, 1},
		Provenance: simstore.Provenance{Params: map[string]string{"missing": "zero"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutVectors(ctx, simstore.Vectors{LabelSet: "toy", Model: "d2v", IDs: []string{"n01", "n02"}, Dim: 2, Data: []float32{1.5, -2, 0, 3}}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutArticles(ctx, simstore.Article{LabelSet: "toy", ClassID: "n01", Title: "Tench", Text: "The tench is a fish.\n"}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutRun(ctx, simstore.Run{ID: "r1", Status: "done", Top1: []float64{0.75}}); err != nil {
		t.Fatal(err)
	}
	return dir, matrixKey
}

func TestStoreCommands(t *testing.T) {
	dir, mkey := fixtureStore(t)
	tests := []struct {
		name string
		args []string
		code int
		out  []string // lines or substrings expected on stdout
		err  string   // substring expected on stderr
	}{
		{"info", []string{"store", "info"}, 0, []string{"store     " + dir, "articles  1", "vectors   1", "matrices  1", "runs      1"}, ""},
		{"info json", []string{"--json", "store", "info"}, 0, []string{`"message_type":"store_info"`, `"counts":{"article":1,"matrix":1,"model":0,"run":1,"vectors":1}`}, ""},
		{"ls", []string{"store", "ls"}, 0, []string{"KIND      RECORDS  SIZE\narticles  1        ", "\nvectors   1 ", "\nmatrices  1 ", "\nruns      1 ", "\nthe records: lcl store ls --all [--kind KIND]\n"}, ""},
		{"ls all", []string{"store", "ls", "--all"}, 0, []string{"KEY", "art/toy/n01", "run/r1", "vec/toy/d2v", mkey}, ""},
		{"ls kind", []string{"store", "ls", "--kind", "vectors"}, 0, []string{"KIND     RECORDS  SIZE\nvectors  1        ", "\n\nKEY          KIND     SIZE\nvec/toy/d2v  vectors  "}, ""},
		{"ls json", []string{"--json", "store", "ls", "--kind", "run"}, 0, []string{`{"key":"run/r1","kind":"run","message_type":"store_entry","size":`}, ""},
		{"ls bad kind", []string{"store", "ls", "--kind", "movie"}, ExitUsage, nil, `--kind "movie"`},
		{"ls misspelt kind", []string{"store", "ls", "--kind", "matrx"}, ExitUsage, nil, `--kind "matrx": want one of article, vectors, matrix, run, model; did you mean matrix?`},
		{"matrix csv", []string{"store", "export", mkey, "--format", "csv"}, 0, []string{"class,n01,n02,n03\nn01,1,0.25,0.1\nn02,0.25,1,1e-30\nn03,0.1,1e-30,1\n"}, ""},
		{"matrix json", []string{"store", "export", mkey, "--format", "json"}, 0, []string{`"data":[[1,0.25,0.1],[0.25,1,1e-30],[0.1,1e-30,1]]`, `"classes":["n01","n02","n03"]`, `"missing":"zero"`, `"key":"` + mkey}, ""},
		{"vectors csv", []string{"store", "export", "vec/toy/d2v"}, 0, []string{"id,d0,d1\nn01,1.5,-2\nn02,0,3\n"}, ""},
		{"article text", []string{"store", "export", "art/toy/n01"}, 0, []string{"The tench is a fish.\n"}, ""},
		{"article json", []string{"store", "export", "art/toy/n01", "--format", "json"}, 0, []string{`"title":"Tench"`}, ""},
		{"run json", []string{"store", "export", "run/r1"}, 0, []string{`"status":"done"`, `"top1":[0.75]`}, ""},
		{"run as npy", []string{"store", "export", "run/r1", "--format", "npy"}, ExitUsage, nil, "a run cannot be exported as npy"},
		{"bad format", []string{"store", "export", mkey, "--format", "xml"}, ExitUsage, nil, `--format "xml"`},
		{"no key", []string{"store", "export"}, ExitUsage, nil, "exactly one KEY"},
		{"missing key", []string{"store", "export", "sim/toy/visual/0000"}, ExitFailure, nil, `no record at key "sim/toy/visual/0000" (see lcl store ls)`},
		{"key's folder", []string{"store", "export", "vec/toy"}, ExitFailure, nil, `no record at key "vec/toy": the keys under it are vec/toy/d2v (see lcl store ls)`},
		{"unknown subcommand", []string{"store", "frobnicate"}, ExitUsage, nil, `unknown command "frobnicate"`},
		{"rm missing leaves all", []string{"store", "rm", "run/r1", "run/nope"}, ExitFailure, nil, "run/nope"},
		{"run still there", []string{"store", "ls", "--all", "--kind", "run"}, 0, []string{"run/r1"}, ""},
		{"rm", []string{"store", "rm", "run/r1"}, 0, nil, "deleted run/r1"},
		{"run gone", []string{"store", "export", "run/r1"}, ExitFailure, nil, "no record"},
	}
	for _, tt := range tests { // in order: later cases see earlier deletions
		t.Run(tt.name, func(t *testing.T) {
			r := cliRun(t, append([]string{"--store", dir}, tt.args...)...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d; stderr %q", r.code, tt.code, r.err)
			}
			for _, want := range tt.out {
				if !strings.Contains(r.out, want) {
					t.Errorf("stdout %q lacks %q", r.out, want)
				}
			}
			if !strings.Contains(r.err, tt.err) {
				t.Errorf("stderr %q lacks %q", r.err, tt.err)
			}
		})
	}
}

func TestStoreExportNpyLoadsInNumPy(t *testing.T) {
	py := testdep.PythonModules(t, "numpy")
	dir := t.TempDir()
	s, err := simstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	// A matrix whose header needs padding and whose values need every bit.
	n := 37
	m := simstore.Matrix{LabelSet: "toy", Kind: "semantic", Data: make([]float32, n*n)}
	for i := range n {
		m.Classes = append(m.Classes, "c"+string(rune('A'+i%26))+string(rune('0'+i/26)))
	}
	for i := range m.Data {
		m.Data[i] = float32(math.Sin(float64(i))) / 3
	}
	m.Data[5] = float32(math.NaN())
	key, err := s.PutMatrix(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()

	out := filepath.Join(t.TempDir(), "sem.npy")
	r := cliRun(t, "--store", dir, "--json", "store", "export", key, "-o", out)
	if r.code != 0 {
		t.Fatalf("export: exit %d: %s", r.code, r.err)
	}
	var msg struct {
		MessageType string `json:"message_type"`
		Format      string `json:"format"`
		Shape       []int  `json:"shape"`
	}
	if err := json.Unmarshal([]byte(r.out), &msg); err != nil || msg.MessageType != "store_exported" || msg.Format != "npy" || msg.Shape[0] != n {
		t.Errorf("--json message %q (%v)", r.out, err)
	}
	got, err := py.Command("-c", `import numpy, sys
a = numpy.load(sys.argv[1])
print(a.dtype, a.shape, a.tobytes().hex())`, out).CombinedOutput()
	if err != nil {
		t.Fatalf("numpy.load: %v\n%s", err, got)
	}
	var want []byte
	for _, v := range m.Data {
		want = binary.LittleEndian.AppendUint32(want, math.Float32bits(v))
	}
	wantLine := "float32 (37, 37) " + hex.EncodeToString(want)
	if strings.TrimSpace(string(got)) != wantLine {
		t.Errorf("numpy read %.80s…, want %.80s…", got, wantLine)
	}
	ids, err := os.ReadFile(strings.TrimSuffix(out, ".npy") + ".ids.txt")
	if err != nil || string(ids) != strings.Join(m.Classes, "\n")+"\n" {
		t.Errorf("ids file: %q, %v", ids, err)
	}
	entries, _ := os.ReadDir(filepath.Dir(out))
	if len(entries) != 2 {
		t.Errorf("export left %d files, want the .npy and .ids.txt (no temporaries)", len(entries))
	}
}

func TestStoreInUseFailsFast(t *testing.T) {
	dir := t.TempDir()
	s, err := simstore.Open(dir) // holds Badger's directory lock, as another lcl would
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := cliRun(t, "--store", dir, "store", "ls")
	if r.code != ExitFailure {
		t.Fatalf("exit %d, want 1", r.code)
	}
	if strings.Count(r.err, "\n") != 1 || !strings.Contains(r.err, dir) || !strings.Contains(r.err, "in use") {
		t.Errorf("stderr %q: want one line naming %s and saying it is in use", r.err, dir)
	}
}

func TestStoreExportCorruptValueNamesKey(t *testing.T) {
	dir := t.TempDir()
	s, err := simstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	// 600×600 float32 (1.4 MB) is kept verbatim in Badger's value log.
	n := 600
	m := simstore.Matrix{LabelSet: "toy", Kind: "semantic", Data: make([]float32, n*n)}
	for i := range n {
		m.Classes = append(m.Classes, "c"+strconv.Itoa(i))
	}
	const marker = 4242.125
	m.Data[777] = marker
	key, err := s.PutMatrix(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	pat := binary.LittleEndian.AppendUint32(nil, math.Float32bits(marker))
	files, _ := filepath.Glob(filepath.Join(dir, "*.vlog"))
	flipped := false
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if i := strings.Index(string(b), string(pat)); i >= 0 {
			b[i+2] ^= 0x08
			if err := os.WriteFile(f, b, 0o644); err != nil {
				t.Fatal(err)
			}
			flipped = true
		}
	}
	if !flipped {
		t.Fatal("matrix bytes not found in the value log")
	}
	r := cliRun(t, "--store", dir, "store", "export", key, "--format", "npy", "-o", filepath.Join(t.TempDir(), "m.npy"))
	if r.code != ExitFailure || strings.Count(r.err, "\n") != 1 || !strings.Contains(r.err, `corrupt value at key "`+key+`"`) {
		t.Errorf("export of a flipped value: exit %d, stderr %q; want exit 1 and one line naming %s", r.code, r.err, key)
	}
	if r := cliRun(t, "--store", dir, "store", "ls", "--all"); r.code != 0 || !strings.Contains(r.out, key) {
		t.Errorf("ls on a store with a corrupt value: exit %d, %q %q", r.code, r.out, r.err)
	}
}
