package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/lcl-project/lcl/internal/sysmem"
	"github.com/lcl-project/lcl/trainer/models"
)

// shaped is what checkFits needs of a data set.
type shaped interface {
	Shape() (c, h, w int)
	NumClasses() int
}

// batchCheck is one batch size to check, and the flag that set it.
type batchCheck struct {
	flag  string // "--batch", "--eval-batch"
	size  int
	train bool
}

// checkFits estimates, from the model's description, the memory its
// parameters and each batch need, and refuses (naming the option) what
// this machine cannot hold, before libtorch or the loader allocate
// anything: a model option or batch size far too large ended in Go's fatal
// out-of-memory error or a bare std::bad_alloc.
// source names where the model came from in messages ("--model NAME").
func checkFits(source, model string, ds shaped, batches ...batchCheck) error {
	c, h, w := ds.Shape()
	z := models.Size{Input: int64(c) * int64(h) * int64(w)}
	if !strings.HasPrefix(model, models.ScriptPrefix) { // only libtorch can count a TorchScript model
		spec, err := models.Builtin().Get(model, models.Input{C: c, H: h, W: w, NumClasses: ds.NumClasses()})
		if err != nil {
			return fmt.Errorf("%s: %w", source, err)
		}
		if z, err = models.Estimate(spec); err != nil {
			return fmt.Errorf("%s: %w", source, err)
		}
	}
	avail, ok := sysmem.Total()
	if !ok {
		return nil
	}
	for _, b := range batches {
		if b.size <= 0 {
			continue
		}
		var tl *models.TooLargeError
		if err := models.CheckFits(z, b.size, b.train, avail); errors.As(err, &tl) {
			if tl.Option == "model" {
				return fmt.Errorf("%s: %s", source, tl.Msg)
			}
			return fmt.Errorf("%s %d: %s", b.flag, b.size, tl.Msg)
		} else if err != nil {
			return err
		}
	}
	return nil
}
