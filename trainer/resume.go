package trainer

import (
	"fmt"
	"regexp"
)

// epochsField is the epoch count inside the "optim" identity.
var epochsField = regexp.MustCompile(`\bepochs=\d+ ?`)

// withoutEpochs is an "optim" identity without its epoch count: a run
// resumed with another --epochs is the same run, continued.
func withoutEpochs(optim string) string { return epochsField.ReplaceAllString(optim, "") }

// resumePosition checks the checkpoint's position against this run's
// stages and sets where the run continues. A larger epoch count continues
// the stage in progress, or the last stage of a finished run (the
// learning-rate schedule is then that of the new length: the epochs already
// trained stay as they were); stages already finished keep the length they
// were trained with.
func (r *runner) resumePosition(ck *checkpoint) error {
	st := &ck.State
	was := st.StageEpochs
	if was == nil { // written before checkpoints recorded the lengths
		if st.Identity["optim"] != r.id["optim"] {
			return fmt.Errorf("written for optim %q, this run has %q (this checkpoint does not record its stages' "+
				"lengths: resume it with its --epochs)", st.Identity["optim"], r.id["optim"])
		}
		for _, s := range r.stages {
			was = append(was, s.Epochs)
		}
	}
	if len(was) != len(r.stages) {
		return fmt.Errorf("%d stages, this run has %d", len(was), len(r.stages))
	}
	p := st.Position
	if p.Stage < 0 || p.Stage > len(r.stages) || (p.Stage < len(r.stages) && (p.Epoch < 0 || p.Epoch > was[p.Stage])) {
		return fmt.Errorf("position stage %d epoch %d outside the run's stages", p.Stage, p.Epoch)
	}
	last := len(r.stages) - 1
	for s := range min(p.Stage, last) {
		r.stages[s].Epochs = was[s] // finished before the last stage
	}
	if p.Stage == len(r.stages) {
		switch {
		case st.Stopped > 0 && st.Stopped < was[last]:
			return fmt.Errorf("the run already finished: early stopping ended it after epoch %d of %d (a larger --epochs does not continue it)", st.Stopped, was[last])
		case r.stages[last].Epochs <= was[last] || st.Peers == 0:
			return fmt.Errorf("the run already finished (%d epochs; a larger --epochs continues it)", was[last])
		}
		// Continue the last stage from its end (a stop that older lcl
		// recorded at the last epoch ended nothing early).
		st.Position, st.Stopped = position{Stage: last, Epoch: was[last], PrevClass: p.PrevClass}, 0
		return nil
	}
	if n := r.stages[p.Stage].Epochs; n < p.Epoch {
		return fmt.Errorf("stage %q trained %d epochs already, this run has %d", r.stages[p.Stage].Name, p.Epoch, n)
	}
	return nil
}
