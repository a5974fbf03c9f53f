package data

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/lcl-project/lcl/labels"
)

// SpecError is a data set that cannot be named from the arguments given
// (lcl train's --synsets and --data, a grid's labels and data): an error in
// how lcl was called, not in the data.
type SpecError struct{ msg string }

func (e *SpecError) Error() string { return e.msg }

// SpecFor turns a run's label set and data argument (lcl train's --synsets
// and --data) into a spec for Open: the argument when it is a spec,
// SYNSETS:DIR when it is a folder (the label set names its kind), the label
// set's own kind at its default place when it is empty. A path that names
// no folder is an error of the file system, not a *SpecError.
func SpecFor(synsets, arg string) (string, error) {
	if arg == "" {
		if synsets == "" {
			return "", &SpecError{"give --data or --synsets"}
		}
		return synsets, nil
	}
	st, err := os.Stat(arg)
	if err == nil && st.IsDir() {
		if synsets == "" {
			return "", &SpecError{fmt.Sprintf("--data %s is a directory: name its kind with --synsets or write KIND:%s", arg, arg)}
		}
		return synsets + ":" + arg, nil
	}
	if kind, _, _ := strings.Cut(arg, ":"); strings.ContainsRune(kind, os.PathSeparator) {
		// Not a spec (a kind has no slash): a folder that is not there.
		if err == nil {
			return "", fmt.Errorf("--data %s is not a folder", arg)
		}
		return "", &missingData{arg, err}
	}
	return arg, nil
}

// missingData is a --data folder that cannot be read (it is an
// fs.ErrNotExist when it is not there).
type missingData struct {
	arg string
	err error // os.Stat's
}

func (e *missingData) Error() string {
	if errors.Is(e.err, fs.ErrNotExist) {
		return fmt.Sprintf("--data %s: no such folder (give a data set folder, or a spec KIND[:DIR] with KIND one of %s)", e.arg, strings.Join(Kinds(), ", "))
	}
	return fmt.Sprintf("--data %s: %v", e.arg, errors.Unwrap(e.err))
}

func (e *missingData) Unwrap() error { return e.err }

// Kind is the data kind a spec names: "fashion-mnist" for
// "fashion-mnist:DIR?scale=1", "synthetic" for "synthetic?n=96".
func Kind(spec string) string {
	kind, _, _ := strings.Cut(spec, ":")
	kind, _, _ = strings.Cut(kind, "?")
	return kind
}

// LabelSet is the label set of a run on spec: synsets when given (an error
// when it does not load), else the built-in set named like the spec's kind
// (fashion-mnist:DIR → fashion-mnist), else nil (classes are numbered).
func LabelSet(synsets, spec string) (*labels.Set, error) {
	if synsets != "" {
		set, err := labels.Load(synsets)
		if err != nil {
			return nil, fmt.Errorf("--synsets: %w", err)
		}
		return set, nil
	}
	if set, err := labels.Builtin(Kind(spec)); err == nil {
		return set, nil
	}
	return nil, nil
}

// RunData is the data of a training run: the split, its label set, and the
// part of the training split the run trains on.
type RunData struct {
	Train, Test Dataset
	Set         *labels.Set // LabelSet's: nil when the classes have no label set
	Indices     []int       // Fraction's: nil for the whole training split
}

// OpenRun opens spec for a run labelled by synsets (see LabelSet), which
// must have as many classes as the data when given, keeping the
// class-stratified fraction of the training split drawn with seed (see
// Fraction; 1 keeps it whole).
func OpenRun(spec, synsets string, fraction float64, seed int64) (*RunData, error) {
	train, test, err := Open(spec)
	if err != nil {
		return nil, err
	}
	set, err := LabelSet(synsets, spec)
	if err != nil {
		return nil, err
	}
	if synsets != "" && len(set.Classes) != train.NumClasses() {
		return nil, fmt.Errorf("--synsets %s has %d classes, the data %s has %d", synsets, len(set.Classes), spec, train.NumClasses())
	}
	d := &RunData{Train: train, Test: test, Set: set}
	if fraction < 1 {
		if d.Indices, err = Fraction(train, fraction, seed); err != nil {
			return nil, err
		}
	}
	return d, nil
}
