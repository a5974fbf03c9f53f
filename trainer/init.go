package trainer

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/lcl-project/lcl/internal/bounded"
	"github.com/lcl-project/lcl/trainer/safetensors"
	"github.com/lcl-project/lcl/trainer/torch"
)

// initWeights are the tensors of Config.Init and the module prefixes of
// Config.InitSkip, which keep the model's own initialisation.
type initWeights struct {
	path    string
	tensors map[string]safetensors.Tensor
	skip    []string
	digest  string
}

// readInit reads a safetensors file of weights (written by lcl, or a
// torchvision/timm state dict converted by hand: docs/trainer.md).
func readInit(path string, skip []string) (*initWeights, error) {
	// Header first: the file must hold exactly the data it declares.
	b, err := safetensors.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("trainer: --init: %w", err)
	}
	ts, _, err := safetensors.Read(b)
	if err != nil {
		return nil, fmt.Errorf("trainer: --init %s: %w", bounded.Quote(path), err)
	}
	if err := checkFinite("--init "+bounded.Quote(path), ts); err != nil {
		return nil, err
	}
	sum := sha256.Sum256(b)
	w := &initWeights{path: path, tensors: map[string]safetensors.Tensor{}, digest: hex.EncodeToString(sum[:8])}
	for _, t := range ts {
		w.tensors[t.Name] = t
	}
	for _, s := range skip {
		if s = strings.TrimSuffix(strings.TrimSpace(s), "."); s != "" {
			w.skip = append(w.skip, s)
		}
	}
	return w, nil
}

// checkFinite refuses tensors holding NaN or infinite values: a NaN batch
// norm statistic trains an epoch, then fails to save ("json: unsupported
// value: NaN"), and evaluates to a NaN loss.
func checkFinite(what string, ts []safetensors.Tensor) error {
	for _, t := range ts {
		if i, v := t.FirstNonFinite(); i >= 0 {
			return fmt.Errorf("trainer: %s: tensor %q holds %v at index %d: weights must be finite", what, t.Name, v, i)
		}
	}
	return nil
}

// skipped reports whether a tensor name lies under one of the skip
// prefixes ("fc" covers fc.weight and fc.bias, not fc1.weight).
func (w *initWeights) skipped(name string) bool {
	for _, s := range w.skip {
		if name == s || strings.HasPrefix(name, s+".") {
			return true
		}
	}
	return false
}

// apply loads the weights into m strictly: every tensor of m not under a
// skip prefix must be in the file with its shape, and every tensor of the
// file not under a skip prefix must be one of m's. All mismatches are
// reported in one error. heads names m's classifier for the hint.
func (w *initWeights) apply(m *torch.Model, heads []string) error {
	have, err := m.State().Copy()
	if err != nil {
		return fmt.Errorf("trainer: init weights: %w", err)
	}
	for _, s := range w.skip {
		if !slices.ContainsFunc(have, func(n torch.Named) bool { return n.Name == s || strings.HasPrefix(n.Name, s+".") }) {
			return fmt.Errorf("trainer: --init-skip %s: the model has no tensor under %q%s", s, s, headHint(heads))
		}
	}
	var missing, unexpected, mismatched []string
	state := make(map[string]torch.Named, len(have))
	names := map[string]bool{}
	for _, n := range have {
		names[n.Name] = true
		// Level heads (HAF's) keep their initialisation: no weights file
		// holds them (the final weights leave them out).
		if w.skipped(n.Name) || strings.HasPrefix(n.Name, torch.LevelHeadsPrefix) {
			state[n.Name] = n
			continue
		}
		t, ok := w.tensors[n.Name]
		if !ok {
			missing = append(missing, n.Name)
			continue
		}
		if !slices.Equal(t.Shape, n.Shape) {
			mismatched = append(mismatched, fmt.Sprintf("%s (file %v, model %v)", n.Name, t.Shape, n.Shape))
			continue
		}
		data, err := convert(t, n.DType)
		if err != nil {
			mismatched = append(mismatched, fmt.Sprintf("%s (%v)", n.Name, err))
			continue
		}
		n.Data = data
		state[n.Name] = n
	}
	for name := range w.tensors {
		if !names[name] && !w.skipped(name) {
			unexpected = append(unexpected, name)
		}
	}
	if len(missing)+len(unexpected)+len(mismatched) > 0 {
		var parts []string
		for _, l := range []struct {
			what  string
			names []string
		}{{"missing", missing}, {"unexpected", unexpected}, {"shape or type mismatch", mismatched}} {
			if len(l.names) > 0 {
				slices.Sort(l.names)
				parts = append(parts, fmt.Sprintf("%s %d: %s", l.what, len(l.names), list(l.names, 12)))
			}
		}
		// Only the classifier differs: say how to keep it.
		hint := ""
		underHead := func(n string) bool {
			return slices.ContainsFunc(heads, func(h string) bool { return strings.HasPrefix(n, h+".") })
		}
		if len(heads) > 0 && len(unexpected) == 0 && !slices.ContainsFunc(append(missing, mismatched...), func(n string) bool { return !underHead(n) }) {
			hint = fmt.Sprintf(" (a classifier for other classes: --init-skip %s)", strings.Join(heads, ","))
		}
		return fmt.Errorf("trainer: --init %s does not match the model: %s%s", w.path, strings.Join(parts, "; "), hint)
	}
	if err := m.State().Load(state); err != nil {
		return fmt.Errorf("trainer: init weights %s: %w", w.path, err)
	}
	return nil
}

func list(names []string, max int) string {
	if len(names) <= max {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:max], ", ") + fmt.Sprintf(", … (%d more)", len(names)-max)
}

// convert returns t's data as want: the same type as is, float types
// converted to float32 (a file saved in half or double precision).
func convert(t safetensors.Tensor, want torch.DType) ([]byte, error) {
	have, err := torch.ParseDType(t.DType)
	if err != nil {
		return nil, err
	}
	if have == want {
		return t.Data, nil
	}
	if want != torch.Float32 {
		return nil, fmt.Errorf("dtype %v, want %v", have, want)
	}
	var f func([]byte) float32
	switch have {
	case torch.Float64:
		f = func(b []byte) float32 { return float32(math.Float64frombits(binary.LittleEndian.Uint64(b))) }
	case torch.Float16:
		f = func(b []byte) float32 { return halfToFloat(binary.LittleEndian.Uint16(b)) }
	case torch.BFloat16:
		f = func(b []byte) float32 { return math.Float32frombits(uint32(binary.LittleEndian.Uint16(b)) << 16) }
	default:
		return nil, fmt.Errorf("dtype %v, want %v", have, want)
	}
	size := have.Size()
	out := make([]byte, 0, len(t.Data)/size*4)
	for i := 0; i+size <= len(t.Data); i += size {
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(f(t.Data[i:i+size])))
	}
	return out, nil
}

// halfToFloat widens an IEEE 754 half-precision value.
func halfToFloat(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0 && frac == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal
		return float32(math.Copysign(float64(frac)*math.Pow(2, -24), float64(int32(sign)>>31|1)))
	case exp == 0x1f:
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	}
	return math.Float32frombits(sign | (exp+112)<<23 | frac<<13)
}

func headHint(heads []string) string {
	if len(heads) == 0 {
		return ""
	}
	return " (its classifier: " + strings.Join(heads, ", ") + ")"
}
