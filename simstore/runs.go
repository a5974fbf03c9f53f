package simstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	badger "github.com/dgraph-io/badger/v4"
)

// Statuses of a stored run.
const (
	RunRunning = "running" // launched; still running, or interrupted (resumed next time)
	RunDone    = "done"
	RunFailed  = "failed"
)

// Run is the result of one training run, stored under run/ID where ID is
// its configuration's digest (RunConfig.ID).
type Run struct {
	ID     string    `json:"id"`             // Config.ID()
	Config RunConfig `json:"config"`         // every setting that can change the result
	Status string    `json:"status"`         // RunRunning, RunDone, RunFailed
	Top1   []float64 `json:"top1,omitempty"` // final test top-1 per model (peers: one each), as fractions
	Top5   []float64 `json:"top5,omitempty"`
	// Hier holds the final hierarchical metrics per model of a run with a
	// hierarchy, by name: mistake_severity, hdist1, hdist5, hdist20.
	Hier map[string][]float64 `json:"hier,omitempty"`
	// Epochs is the per-epoch metrics log (metrics.jsonl) as a JSON array.
	Epochs    json.RawMessage `json:"epochs,omitempty"`
	Dir       string          `json:"dir,omitempty"` // run directory (checkpoints, logs)
	UpdatedAt time.Time       `json:"updated_at"`
}

// RunConfig is the configuration of one training run as `lcl train`'s
// flags and a grid's fields give it: every setting that can change the
// result, and nothing that only says where or how fast the run executes
// (device, threads, workers, processes, run folder). `lcl train`,
// `lcl experiment` and `lcl report` share it; its digest keys the stored run,
// so two runs that differ in any of these settings are two records.
type RunConfig struct {
	Labels   string  `json:"labels"`   // label set (--synsets)
	Data     string  `json:"data"`     // data set spec or folder (--data)
	Model    string  `json:"model"`    // architecture (--model)
	Fraction float64 `json:"fraction"` // data ratio DR (--fraction)
	Strategy string  `json:"strategy"` // --strategy
	// Source is the similarity source of a strategy that uses one (--source).
	Source string `json:"source,omitempty"`
	// Params are the strategy parameters (--epsilon, --param NAME=VALUE), as
	// spelt: 0.990 and 0.99 are different runs.
	Params map[string]string `json:"params,omitempty"`
	Seed   int               `json:"seed"`
	Epochs int               `json:"epochs,omitempty"` // 0: the preset's
	Preset string            `json:"preset,omitempty"` // "": the model's default preset
	// Args are the other `lcl train` flags that change the result (--batch,
	// --lr, --matrix, ...), by flag name without dashes.
	Args map[string]string `json:"args,omitempty"`
	// Targets is the SHA-256 of the --matrix file of a strategy that trains
	// on that matrix as its targets (soft): the file's content, not only its
	// path in Args, keys the run, so a file edited in place is another run.
	// Empty (and absent from the digest) for every other run, whose keys
	// stay those of older stores.
	Targets string `json:"targets,omitempty"`
}

// ID is the run's key: "r" and the first 16 hex digits of the SHA-256 of the
// configuration's canonical JSON (encoding/json sorts map keys).
func (c RunConfig) ID() string {
	raw, err := json.Marshal(c)
	if err != nil {
		panic(fmt.Sprintf("simstore: run config does not marshal: %v", err)) // only plain types: cannot happen
	}
	sum := sha256.Sum256(raw)
	return "r" + hex.EncodeToString(sum[:8])
}

// Method names the column a run belongs to in a report: the strategy in
// capitals, then its parameters and similarity source, e.g. "LCL(ε=0.99,
// semantic)", and the file name of a target matrix (Targets), e.g.
// "SOFT(anneal=0.9, targets.csv)".
func (c RunConfig) Method() string {
	name := strings.ToUpper(c.Strategy)
	keys := make([]string, 0, len(c.Params))
	for k := range c.Params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		label := k
		if k == "epsilon" {
			label = "ε"
		}
		parts = append(parts, label+"="+c.Params[k])
	}
	if c.Source != "" {
		parts = append(parts, c.Source)
	}
	if _, named := c.Params["matrix"]; c.Targets != "" && !named && c.Args["matrix"] != "" {
		// A target matrix is what a soft run is: two files, two columns.
		parts = append(parts, filepath.Base(c.Args["matrix"]))
	}
	if len(parts) == 0 {
		return name
	}
	return name + "(" + strings.Join(parts, ", ") + ")"
}

func (r *Run) prepare() error {
	if r.ID == "" {
		return fmt.Errorf("simstore: run needs an id")
	}
	r.UpdatedAt = time.Now().UTC()
	return nil
}

// PutRun stores (replacing) a run result.
func (s *Store) PutRun(ctx context.Context, r Run) error {
	return s.Update(ctx, func(tx *Tx) error { return tx.PutRun(r) })
}

// GetRun returns a run by id.
func (s *Store) GetRun(ctx context.Context, id string) (*Run, error) {
	return s.runByKey(ctx, runKey(id))
}

func (s *Store) runByKey(ctx context.Context, key []byte) (*Run, error) {
	var r Run
	if _, err := s.get(ctx, key, KindRun, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// ListRuns returns every stored run, in id order.
func (s *Store) ListRuns(ctx context.Context) ([]Run, error) {
	var out []Run
	err := s.db.View(func(txn *badger.Txn) error {
		var err error
		out, err = listRuns(txn)
		return err
	})
	return out, err
}

func listRuns(txn *badger.Txn) ([]Run, error) {
	var out []Run
	it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: true, Prefix: []byte(prefixRun + "/")})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		item := it.Item()
		var r Run
		val, err := readValue(txn, item)
		if err != nil {
			return nil, err
		}
		if _, err := decode(item.Key(), KindRun, val, &r); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// dropTrainDuplicates is the schema 1 → 2 upgrade. Before schema 2, a grid's
// `lcl train` children recorded every grid run a second time, under
// "train-…" next to the grid's own "r…" record and with the same run folder.
// It deletes those duplicates (the grid's record holds the same results and
// more of the configuration); a "train-…" record of a run started by hand
// has no twin and stays, readable as before.
func dropTrainDuplicates(txn *badger.Txn) error {
	runs, err := listRuns(txn)
	if err != nil {
		return err
	}
	gridDirs := map[string]bool{}
	for _, r := range runs {
		if !strings.HasPrefix(r.ID, "train-") && r.Dir != "" {
			gridDirs[r.Dir] = true
		}
	}
	tx := &Tx{ctx: context.Background(), txn: txn}
	for _, r := range runs {
		if strings.HasPrefix(r.ID, "train-") && gridDirs[r.Dir] {
			if err := tx.Delete(string(runKey(r.ID))); err != nil {
				return err
			}
		}
	}
	return nil
}
