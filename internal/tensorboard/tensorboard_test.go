package tensorboard

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/internal/testdep"
)

// TFRecord's masked CRC by hand: CRC-32C("123456789") is 0xe3069283 (the
// check value of the Castagnoli CRC); rotated right by 15 bits it is
// 0x2507c60d, plus 0xa282ead8 is 0xc78ab0e5.
func TestMaskedCRC(t *testing.T) {
	if got := MaskedCRC([]byte("123456789")); got != 0xc78ab0e5 {
		t.Errorf("MaskedCRC = %#x, want 0xc78ab0e5", got)
	}
	var buf bytes.Buffer
	if err := WriteRecord(&buf, []byte("abc")); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	if len(b) != 8+4+3+4 || binary.LittleEndian.Uint64(b) != 3 || string(b[12:15]) != "abc" ||
		binary.LittleEndian.Uint32(b[8:]) != MaskedCRC(b[:8]) || binary.LittleEndian.Uint32(b[15:]) != MaskedCRC([]byte("abc")) {
		t.Errorf("record % x", b)
	}
}

type event struct {
	Step        int64              `json:"step"`
	WallTime    float64            `json:"wall_time"`
	FileVersion string             `json:"file_version"`
	SessionLog  string             `json:"session_log"`
	Scalars     map[string]float64 `json:"scalars"`
	Plugin      map[string]string  `json:"plugin"`
}

// readEvents reads event files back with the independent reader in
// testdata (its own CRC-32C, python3-protobuf over tensorboard.proto).
func readEvents(t *testing.T, paths ...string) []event {
	t.Helper()
	py := testdep.PythonModules(t, "google.protobuf")
	reader, err := filepath.Abs(filepath.Join("testdata", "read_events.py"))
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(reader)
	if err != nil {
		t.Fatal(err)
	}
	// The reader finds tensorboard_pb2 next to itself through __file__.
	script := "__file__ = " + quote(reader) + "\n" + string(src)
	var out []event
	for _, line := range strings.Split(strings.TrimSpace(py.Run(script, paths...)), "\n") {
		var e event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("reader line %q: %v", line, err)
		}
		out = append(out, e)
	}
	return out
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

func TestWriterReadBack(t *testing.T) {
	dir := t.TempDir()
	w, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(0); err != nil {
		t.Fatal(err)
	}
	if err := w.Scalars(10, Scalar{"train/loss", 2.5}, Scalar{"train/lr", 0.1}); err != nil {
		t.Fatal(err)
	}
	if err := w.Scalars(20, Scalar{"train/loss", 1.25}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(filepath.Base(w.Path()), "events.out.tfevents.") {
		t.Errorf("file name %s: TensorBoard reads files named *tfevents*", w.Path())
	}
	ev := readEvents(t, w.Path())
	if len(ev) != 4 || ev[0].FileVersion != "brain.Event:2" || ev[1].SessionLog != "START" || ev[1].Step != 0 {
		t.Fatalf("events %+v", ev)
	}
	if ev[2].Step != 10 || ev[2].Scalars["train/loss"] != 2.5 || math.Abs(ev[2].Scalars["train/lr"]-0.1) > 1e-7 ||
		ev[2].Plugin["train/loss"] != "scalars" || ev[2].Plugin["train/lr"] != "scalars" {
		t.Errorf("first scalars %+v", ev[2])
	}
	// The metadata rides on a tag's first value only.
	if ev[3].Step != 20 || ev[3].Scalars["train/loss"] != 1.25 || len(ev[3].Plugin) != 0 {
		t.Errorf("second scalars %+v", ev[3])
	}
	if ev[0].WallTime < 1.6e9 {
		t.Errorf("wall time %v", ev[0].WallTime)
	}

	// A damaged byte is a CRC error to the reader.
	raw, _ := os.ReadFile(w.Path())
	raw[len(raw)-6] ^= 1
	bad := filepath.Join(dir, "bad.tfevents")
	os.WriteFile(bad, raw, 0o644)
	py := testdep.PythonModules(t, "google.protobuf")
	src, _ := os.ReadFile(filepath.Join("testdata", "read_events.py"))
	abs, _ := filepath.Abs(filepath.Join("testdata", "read_events.py"))
	cmd := py.Command("-c", "__file__ = "+quote(abs)+"\n"+string(src), bad)
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "CRC does not match") {
		t.Errorf("a damaged file read as %s, %v", out, err)
	}
}
