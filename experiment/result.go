package experiment

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/lcl-project/lcl/internal/atomicfile"
	"github.com/lcl-project/lcl/internal/bounded"
	"os"
	"path/filepath"

	"github.com/lcl-project/lcl/simstore"
)

// Files a finished `lcl train --out DIR` leaves in DIR; the runner and the
// cluster collector read them.
const (
	// ResultFile holds the final result: {"top1": [...], "top5": [...]} with
	// one value per model (DML: one per peer); a single number is accepted too.
	// It is written last, so its presence means the run finished.
	ResultFile = "result.json"
	// MetricsFile holds one JSON object per epoch (epoch, loss, top1, top5 per
	// model, and target_entropy where the strategy logs it).
	MetricsFile = "metrics.jsonl"
	// ConfigFile is written by the runner and the emitted cluster jobs next
	// to the run so that a run directory explains itself.
	ConfigFile = "lcl-run.json"
)

// ErrNoResult means a run directory holds no result file yet.
var ErrNoResult = errors.New("no " + ResultFile)

// perModel accepts a number or a list of numbers.
type perModel []float64

func (p *perModel) UnmarshalJSON(b []byte) error {
	var one float64
	if err := json.Unmarshal(b, &one); err == nil {
		*p = perModel{one}
		return nil
	}
	var many []float64
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("expected a number or a list of numbers, got %s", b)
	}
	*p = many
	return nil
}

// ReadResult reads a finished run's directory (result.json, metrics.jsonl)
// into the record of the run with configuration c, keyed by c.ID(). The
// grid runner, the cluster collector and `lcl train` all record runs with it.
func ReadResult(c simstore.RunConfig, dir string) (simstore.Run, error) {
	path := filepath.Join(dir, ResultFile)
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return simstore.Run{}, fmt.Errorf("%s: %w", dir, ErrNoResult)
	}
	if err != nil {
		return simstore.Run{}, err
	}
	var res struct {
		Top1 perModel `json:"top1"`
		Top5 perModel `json:"top5"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return simstore.Run{}, fmt.Errorf("%s: %w", path, err)
	}
	if len(res.Top1) == 0 {
		return simstore.Run{}, fmt.Errorf("%s: no top1 value", path)
	}
	epochs, err := readEpochs(filepath.Join(dir, MetricsFile))
	if err != nil {
		return simstore.Run{}, err
	}
	return simstore.Run{ID: c.ID(), Config: c, Status: simstore.RunDone, Top1: res.Top1, Top5: res.Top5,
		Epochs: epochs, Dir: dir}, nil
}

// readEpochs turns the JSONL metrics log into a JSON array; a missing log
// gives nil (a run may legitimately log nothing per epoch).
func readEpochs(path string) (json.RawMessage, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var buf bytes.Buffer
	buf.WriteByte('[')
	sc := bounded.NewScanner(f, 16<<20)
	n := 0
	for sc.Scan() {
		line := sc.Line()
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		if !json.Valid(b) {
			return nil, fmt.Errorf("%s:%d: not a JSON object", path, line)
		}
		if n > 0 {
			buf.WriteByte(',')
		}
		buf.Write(b)
		n++
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	buf.WriteByte(']')
	return buf.Bytes(), nil
}

// writeFileAtomic writes data to path so a crash leaves the old or the new file.
func writeFileAtomic(path string, data []byte) error {
	return atomicfile.WriteFile(path, data, 0o644)
}
