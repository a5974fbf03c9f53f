package trainer

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/lcl-project/lcl/trainer/torch"
)

// DefaultRunDir is the run directory of a run given none (lcl train without
// --out): runs/KIND-MODEL-STRATEGY-sSEED, the model's options kept readable
// in a file name (cnn:channels=16x32 → cnn_channels=16x32).
func DefaultRunDir(kind, model, strategy string, seed int64) string {
	return filepath.Join("runs", fmt.Sprintf("%s-%s-%s-s%d", kind, strings.ReplaceAll(model, ":", "_"), strategy, seed))
}

// RunExistsError is a run directory that holds a run (its checkpoint) that
// was not asked to continue: starting over would overwrite it.
type RunExistsError struct{ Dir string }

func (e *RunExistsError) Error() string {
	return e.Dir + " holds a run already: continue it with --resume or choose another --out"
}

// CheckRunDir reports whether dir holds a checkpoint to resume from. A
// checkpoint there is a *RunExistsError unless resume is asked for; only
// the process that writes the run directory (primary: rank 0 of a group)
// refuses, the others follow rank 0 (AgreeCheckpoint).
func CheckRunDir(dir string, resume, primary bool) (checkpoint bool, err error) {
	_, err = os.Stat(filepath.Join(dir, checkpointName))
	checkpoint = err == nil
	if checkpoint && !resume && primary {
		return checkpoint, &RunExistsError{Dir: dir}
	}
	return checkpoint, nil
}

// AgreeCheckpoint returns rank 0's checkpoint on every rank of g: rank 0's
// run directory decides whether the group resumes.
func AgreeCheckpoint(g *torch.Group, checkpoint bool) (bool, error) {
	flag := []byte{0}
	if checkpoint {
		flag[0] = 1
	}
	flag, err := g.Broadcast(flag)
	if err != nil {
		return false, fmt.Errorf("rank %d: %w", g.Rank(), err)
	}
	return flag[0] == 1, nil
}
