package trainer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/lcl-project/lcl/internal/atomicfile"
	"github.com/lcl-project/lcl/internal/bounded"
	"github.com/lcl-project/lcl/trainer/safetensors"
	"github.com/lcl-project/lcl/trainer/torch"
)

// A checkpoint is one safetensors file, checkpoint.safetensors in the run
// directory. Its tensors are
//
//	peer<k>/<name>              parameters and buffers of peer k of the running stage
//	optim<k>/<name>.momentum_buffer  its optimizer's state (SGD's momentum;
//	                            RMSProp's square_avg; Adam's exp_avg, exp_avg_sq, step)
//	ema<k>/<name>               the moving average of its weights (Optim.EMADecay)
//	best<k>/<name>              its best weights so far (model selection)
//	stage/<stage>/<name>        the final model of each finished stage
//
// with torchvision names, and its "__metadata__" holds "lcl.checkpoint": the
// JSON of checkpointState (position, identity, planner state, history).
const checkpointName = "checkpoint.safetensors"

const checkpointFormat = 1

type checkpointState struct {
	Format       int               `json:"format"`
	Identity     map[string]string `json:"identity"`
	Position     position          `json:"position"`
	Peers        int               `json:"peers"`
	Finished     []string          `json:"finished"`
	MetricsBytes int64             `json:"metrics_bytes"`
	Planner      []byte            `json:"planner,omitempty"`
	History      []EpochMetrics    `json:"history"`
	Scaler       *GradScaler       `json:"scaler,omitempty"` // fp16's loss scale
	// StageEpochs are the stages' lengths the run had (checkpoints of older
	// lcl versions lack them).
	StageEpochs []int `json:"stage_epochs,omitempty"`
	// Best is model selection's best epoch of each peer (their weights are
	// the best<k>/ tensors), Stopped the epoch early stopping ended the last
	// stage after.
	Best    []best `json:"best,omitempty"`
	Stopped int    `json:"stopped,omitempty"`
}

type checkpoint struct {
	path    string
	State   checkpointState
	tensors map[string]safetensors.Tensor
}

// stateReader is the state of a model or an optimizer, read one tensor at
// a time.
type stateReader interface {
	Info() ([]torch.Named, error)
	Read(i int, dst []byte) error
}

// sources lists the tensors of s under prefix for safetensors.WriteFrom:
// each is copied out of libtorch only when written, through buf (shared by
// every source of a file, grown to the largest tensor), so writing a file
// costs one tensor of memory, not a second copy of the state.
func sources(prefix string, s stateReader, buf *[]byte) ([]safetensors.Source, error) {
	ns, err := s.Info()
	if err != nil {
		return nil, err
	}
	out := make([]safetensors.Source, len(ns))
	for i, n := range ns {
		size := n.NumBytes()
		out[i] = safetensors.Source{Name: prefix + n.Name, DType: n.DType.String(), Shape: n.Shape, Bytes: size,
			WriteData: func(w io.Writer) error {
				if int64(cap(*buf)) < size {
					*buf = make([]byte, size)
				}
				b := (*buf)[:size]
				if err := s.Read(i, b); err != nil {
					return err
				}
				_, err := w.Write(b)
				return err
			}}
	}
	return out, nil
}

// writeSafetensors writes srcs and meta to path atomically.
func writeSafetensors(path string, srcs []safetensors.Source, meta map[string]string) error {
	_, err := atomicfile.Write(path, 0o644, func(w io.Writer) error { return safetensors.WriteFrom(w, srcs, meta) })
	return err
}

func (r *runner) saveCheckpoint(peers *peerSet, next position, stageDone bool) error {
	if r.cfg.NoCheckpoint || r.cfg.Out == "" || !r.writer() {
		return nil
	}
	st := checkpointState{Format: checkpointFormat, Identity: r.id, Position: next, Peers: len(peers.models),
		MetricsBytes: r.metricsOff, History: r.history, Scaler: r.scaler}
	for _, s := range r.stages {
		st.StageEpochs = append(st.StageEpochs, s.Epochs)
	}
	if r.sel != nil {
		st.Best, st.Stopped = r.sel.best, r.sel.stopped
	}
	if r.metrics != nil {
		if err := r.metrics.Sync(); err != nil {
			return fmt.Errorf("trainer: metrics: %w", err)
		}
	}
	if sp, ok := r.cfg.Planner.(StatefulPlanner); ok {
		b, err := sp.MarshalState()
		if err != nil {
			return fmt.Errorf("trainer: planner state: %w", err)
		}
		st.Planner = b
	}
	var srcs []safetensors.Source
	var buf []byte
	add := func(prefix string, s stateReader) error {
		ss, err := sources(prefix, s, &buf)
		if err != nil {
			return fmt.Errorf("trainer: checkpoint: %w", err)
		}
		srcs = append(srcs, ss...)
		return nil
	}
	for name, m := range r.finished {
		if err := add("stage/"+name+"/", m.State()); err != nil {
			return err
		}
		st.Finished = append(st.Finished, name)
	}
	if stageDone && next.Stage < len(r.stages) {
		// The stage just ended: its peer 0 becomes a finished model.
		name := r.stages[next.Stage-1].Name
		if err := add("stage/"+name+"/", peers.models[0].State()); err != nil {
			return err
		}
		st.Finished = append(st.Finished, name)
		st.Peers = 0
	} else {
		for k, m := range peers.models {
			if err := add(fmt.Sprintf("peer%d/", k), m.State()); err != nil {
				return err
			}
			if err := add(fmt.Sprintf("optim%d/", k), peers.optims[k].State()); err != nil {
				return err
			}
			if k < len(peers.emas) {
				if err := add(fmt.Sprintf("ema%d/", k), peers.emas[k].State()); err != nil {
					return err
				}
			}
		}
		for k, b := range st.Best {
			if b.Epoch > 0 {
				if err := add(fmt.Sprintf("best%d/", k), namedState(b.state)); err != nil {
					return err
				}
			}
		}
	}
	slices.Sort(st.Finished)
	meta, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("trainer: checkpoint: %w", err)
	}
	path := filepath.Join(r.cfg.Out, checkpointName)
	if err := writeSafetensors(path, srcs, map[string]string{"lcl.checkpoint": string(meta), "format": "pt"}); err != nil {
		return fmt.Errorf("trainer: checkpoint: %w", err)
	}
	return nil
}

// ErrCheckpoint marks a checkpoint that cannot be resumed from.
var ErrCheckpoint = errors.New("unusable checkpoint")

func (r *runner) loadCheckpoint() (*checkpoint, error) {
	path := filepath.Join(r.cfg.Out, checkpointName)
	bad := func(format string, a ...any) error {
		return fmt.Errorf("trainer: %w %s: %s", ErrCheckpoint, path, fmt.Sprintf(format, a...))
	}
	b, err := r.readCheckpoint(path)
	if errors.Is(err, safetensors.ErrFormat) {
		return nil, fmt.Errorf("trainer: %w: %w", ErrCheckpoint, err)
	}
	if err != nil {
		return nil, fmt.Errorf("trainer: resume: %w", err)
	}
	ts, meta, err := safetensors.Read(b)
	if err != nil {
		return nil, bad("%v", err)
	}
	raw, ok := meta["lcl.checkpoint"]
	if !ok {
		return nil, bad("no lcl.checkpoint metadata (a weights file, not a checkpoint?)")
	}
	ck := &checkpoint{path: path, tensors: map[string]safetensors.Tensor{}}
	if err := json.Unmarshal([]byte(raw), &ck.State); err != nil {
		return nil, bad("metadata: %v", err)
	}
	if ck.State.Format != checkpointFormat {
		return nil, bad("format %d, this lcl reads %d", ck.State.Format, checkpointFormat)
	}
	if msg := r.identityMismatch(ck.State.Identity); msg != "" {
		return nil, bad("%s", msg)
	}
	if err := r.resumePosition(ck); err != nil {
		return nil, bad("%v", err)
	}
	// The rest of the position against the run: what it says was done
	// before (the epoch's own sums are checked when it resumes: epoch).
	p := ck.State.Position
	done := p.Epoch
	for _, st := range r.stages[:p.Stage] {
		done += st.Epochs
	}
	if len(ck.State.History) != done {
		return nil, bad("history of %d epochs, but the position (stage %d epoch %d) follows %d", len(ck.State.History), p.Stage, p.Epoch, done)
	}
	for _, name := range ck.State.Finished {
		if !slices.ContainsFunc(r.stages[:p.Stage], func(st Stage) bool { return st.Name == name }) {
			return nil, bad("finished stage %q is not a stage before the position's (stage %d)", name, p.Stage)
		}
	}
	if want := r.stages[p.Stage].Peers; len(p.Acc) != 0 && len(p.Acc) != want {
		return nil, bad("position holds %d peers' sums, stage %q has %d", len(p.Acc), r.stages[p.Stage].Name, want)
	}
	for _, t := range ts {
		ck.tensors[t.Name] = t
	}
	if r.sel != nil {
		if err := ck.restoreSelection(r.sel); err != nil {
			return nil, err
		}
	}
	if sp, ok := r.cfg.Planner.(StatefulPlanner); ok && ck.State.Planner != nil {
		if err := sp.UnmarshalState(ck.State.Planner); err != nil {
			return nil, bad("planner state: %v", err)
		}
	}
	for _, name := range ck.State.Finished {
		m, err := torch.NewModel(r.specOf(name), r.cfg.Device)
		if err != nil {
			return nil, fmt.Errorf("trainer: %w", err)
		}
		if err := ck.load("stage/"+name+"/", m.State().Load); err != nil {
			m.Close()
			return nil, err
		}
		r.finished[name] = m
	}
	return ck, nil
}

// identityMismatch says how a checkpoint's identity differs from the run's
// ("written with/for …: resume with the checkpoint's settings, or choose
// another --out"), or "" when it is the run's; the keys are compared in
// sorted order, and --epochs may grow (resumePosition).
func (r *runner) identityMismatch(have map[string]string) string {
	for _, k := range slices.Sorted(maps.Keys(r.id)) {
		h, w := have[k], r.id[k]
		if k == "optim" {
			h, w = withoutEpochs(h), withoutEpochs(w)
		}
		if h == w {
			continue
		}
		if k == "optim" {
			if d := optimDiff(h, w); d != "" {
				return fmt.Sprintf("written with %s: resume with the checkpoint's settings, or choose another --out", d)
			}
		}
		return fmt.Sprintf("written for %s %q, this run has %q: resume with the checkpoint's settings, or choose another --out", k, have[k], r.id[k])
	}
	return ""
}

// check validates a position read from a checkpoint against the epoch it
// resumes: steps in the epoch, batch size and ranks (a checkpoint claiming
// step 10^9 "finished" the epoch early with another loss).
func (p position) check(steps, batch, world int) error {
	if p.Step < 0 || p.Step > steps {
		return fmt.Errorf("position step %d outside the epoch's 0..%d steps", p.Step, steps)
	}
	most := int64(p.Step) * int64(batch) * int64(max(world, 1))
	if p.Images < 0 || p.Images > most {
		return fmt.Errorf("position counts %d images after %d steps of %d", p.Images, p.Step, batch)
	}
	if p.Seconds < 0 || math.IsNaN(p.Seconds) || math.IsInf(p.Seconds, 0) {
		return fmt.Errorf("position time %v s", p.Seconds)
	}
	for q, a := range p.Acc {
		if a.Seen < 0 || a.Seen > most || a.Correct < 0 || a.Correct > a.Seen || a.Loss < 0 || math.IsNaN(a.Loss) || math.IsInf(a.Loss, 0) {
			return fmt.Errorf("position sums of peer %d (loss %v, %d correct of %d seen) impossible after %d steps of %d", q, a.Loss, a.Correct, a.Seen, p.Step, batch)
		}
	}
	return nil
}

func (ck *checkpoint) load(prefix string, into func(map[string]torch.Named) error) error {
	state := map[string]torch.Named{}
	for name, t := range ck.tensors {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		if i, v := t.FirstNonFinite(); i >= 0 {
			return fmt.Errorf("trainer: %w %s: tensor %q holds %v at index %d: weights must be finite", ErrCheckpoint, bounded.Quote(ck.path), name, v, i)
		}
		dt, err := torch.ParseDType(t.DType)
		if err != nil {
			return fmt.Errorf("trainer: %w %s: tensor %q: %v", ErrCheckpoint, ck.path, name, err)
		}
		n := strings.TrimPrefix(name, prefix)
		state[n] = torch.Named{Name: n, DType: dt, Shape: t.Shape, Data: t.Data}
	}
	if err := into(state); err != nil {
		return fmt.Errorf("trainer: %w %s (%s): %w", ErrCheckpoint, ck.path, strings.TrimSuffix(prefix, "/"), err)
	}
	return nil
}

func (ck *checkpoint) restorePeers(ps *peerSet) error {
	if ck.State.Peers == 0 {
		return nil // checkpoint at a stage boundary: the new stage starts fresh
	}
	if ck.State.Peers != len(ps.models) {
		return fmt.Errorf("trainer: %w %s: %d peers, the stage has %d", ErrCheckpoint, ck.path, ck.State.Peers, len(ps.models))
	}
	for k := range ps.models {
		if err := ck.load(fmt.Sprintf("peer%d/", k), ps.models[k].State().Load); err != nil {
			return err
		}
		if err := ck.load(fmt.Sprintf("optim%d/", k), ps.optims[k].State().Load); err != nil {
			return err
		}
		if k < len(ps.emas) {
			if err := ck.load(fmt.Sprintf("ema%d/", k), ps.emas[k].State().Load); err != nil {
				return err
			}
		}
	}
	return nil
}

// restoreSelection gives the selector the checkpoint's best epochs and
// their weights.
func (ck *checkpoint) restoreSelection(s *selector) error {
	s.best, s.stopped = ck.State.Best, ck.State.Stopped
	for k := range s.best {
		if s.best[k].Epoch == 0 {
			continue
		}
		prefix := fmt.Sprintf("best%d/", k)
		err := ck.load(prefix, func(state map[string]torch.Named) error {
			if len(state) == 0 {
				return errors.New("no weights")
			}
			for _, n := range slices.Sorted(maps.Keys(state)) {
				t := state[n]
				t.Data = bytes.Clone(t.Data) // not the whole file's buffer
				s.best[k].state = append(s.best[k].state, t)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// writeWeights writes m's parameters and buffers with torchvision names, a
// file torch's load_state_dict accepts after safetensors.torch.load_file.
// Its metadata holds "format": "pt" and the run's identity as "lcl.<key>"
// (lcl.model, lcl.data, ...).
func writeWeights(path string, m stateReader, id map[string]string) error {
	var buf []byte
	srcs, err := sources("", m, &buf)
	if err != nil {
		return fmt.Errorf("trainer: weights: %w", err)
	}
	meta := map[string]string{"format": "pt"}
	for k, v := range id {
		meta["lcl."+k] = v
	}
	if err := writeSafetensors(path, srcs, meta); err != nil {
		return fmt.Errorf("trainer: weights: %w", err)
	}
	return nil
}

// WeightsMeta returns the metadata of a weights file or checkpoint: for a
// checkpoint, its identity as "lcl.<key>" like a weights file's.
func WeightsMeta(path string) (map[string]string, error) {
	meta, err := safetensors.ReadMeta(path) // the header alone
	if err != nil {
		return nil, err
	}
	if meta == nil {
		meta = map[string]string{}
	}
	if raw, ok := meta["lcl.checkpoint"]; ok {
		var st checkpointState
		if err := json.Unmarshal([]byte(raw), &st); err != nil {
			return nil, fmt.Errorf("%s: %w: metadata: %v", path, ErrCheckpoint, err)
		}
		for k, v := range st.Identity {
			meta["lcl."+k] = v
		}
	}
	return meta, nil
}

// LoadWeights loads a weights file (model.safetensors) or the final model
// of a checkpoint into m.
func LoadWeights(path string, m *torch.Model) (meta map[string]string, err error) {
	b, err := safetensors.ReadFile(path)
	if err != nil {
		return nil, err
	}
	ts, meta, err := safetensors.Read(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", bounded.Quote(path), err)
	}
	prefix := ""
	if _, ok := meta["lcl.checkpoint"]; ok {
		prefix = "peer0/"
	}
	ck := &checkpoint{path: path, tensors: map[string]safetensors.Tensor{}}
	for _, t := range ts {
		// A checkpoint of a run with level heads (HAF's) holds them; the
		// plain model evaluated has none.
		if len(m.Spec().Levels) == 0 && strings.HasPrefix(strings.TrimPrefix(t.Name, prefix), torch.LevelHeadsPrefix) {
			continue
		}
		ck.tensors[t.Name] = t
	}
	return meta, ck.load(prefix, m.State().Load)
}

// writeAtomic writes data to path so a crash leaves the old or the new file.
func writeAtomic(path string, data []byte) error {
	if err := atomicfile.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("trainer: %w", err)
	}
	return nil
}

// optimDiff is "--lr 0.05, this run has --lr 0.1" for two optim identities
// that differ in settings of the table's rows (identityFlags), "" when
// they cannot be compared so (another optimizer: other fields).
func optimDiff(have, want string) string {
	a, b := identityFields(have), identityFields(want)
	if a == nil || b == nil || len(a) != len(b) {
		return ""
	}
	flags := identityFlags()
	var was, is []string
	for i := range a {
		if a[i] == b[i] {
			continue
		}
		flag, known := flags[a[i][0]]
		if a[i][0] != b[i][0] || !known {
			return ""
		}
		was, is = append(was, flag+" "+a[i][1]), append(is, flag+" "+b[i][1])
	}
	if len(was) == 0 {
		return ""
	}
	return strings.Join(was, ", ") + ", this run has " + strings.Join(is, ", ")
}

// identityField is one key=value (or Key:value) of an "optim" identity;
// the keys are the rows' and the optimizers' parameters, values may hold
// spaces (Milestones:[30 60]).
var identityField = regexp.MustCompile(`(?:^|[ {])([A-Za-z_][A-Za-z0-9_]*)[=:]`)

// identityFields splits an "optim" identity into its [key, value] pairs;
// the optimizer's name, a bare word, is one keyed optimizerKey.
func identityFields(id string) [][2]string {
	id = strings.NewReplacer("schedule={", "{", "}", "").Replace(id)
	loc := identityField.FindAllStringSubmatchIndex(id, -1)
	var out [][2]string
	for i, m := range loc {
		end := len(id)
		if i+1 < len(loc) {
			end = loc[i+1][0]
		}
		v := strings.TrimSpace(id[m[1]:end])
		words := []string{v}
		if !strings.HasPrefix(v, "[") {
			words = strings.Fields(v)
		}
		out = append(out, [2]string{id[m[2]:m[3]], words[0]})
		for _, w := range words[1:] { // an optimizer's name
			out = append(out, [2]string{optimizerKey, w})
		}
	}
	return out
}
