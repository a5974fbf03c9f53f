package data

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestSpecFor(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		synsets, arg, want string
		spec               bool  // want a *SpecError
		is                 error // else want an error that is this
		other              bool  // else want some other error
	}{
		{synsets: "fashion-mnist", want: "fashion-mnist"},
		{synsets: "cifar100", arg: dir, want: "cifar100:" + dir},
		{arg: "cifar10:/x", want: "cifar10:/x"},
		{synsets: "cifar100", arg: "cifar10:/x", want: "cifar10:/x"}, // a spec names its own kind
		{arg: "synthetic?n=4", want: "synthetic?n=4"},
		{spec: true},           // neither
		{arg: dir, spec: true}, // a folder of no kind
		{arg: filepath.Join(dir, "nope"), is: fs.ErrNotExist},
		{synsets: "cifar100", arg: file, other: true}, // a file is no folder
	}
	for _, tc := range cases {
		got, err := SpecFor(tc.synsets, tc.arg)
		var se *SpecError
		switch {
		case tc.spec:
			if !errors.As(err, &se) {
				t.Errorf("SpecFor(%q, %q) = %q, %v; want a *SpecError", tc.synsets, tc.arg, got, err)
			}
		case tc.is != nil:
			if !errors.Is(err, tc.is) || errors.As(err, &se) {
				t.Errorf("SpecFor(%q, %q) = %q, %v; want %v", tc.synsets, tc.arg, got, err, tc.is)
			}
		case tc.other:
			if err == nil || errors.As(err, &se) {
				t.Errorf("SpecFor(%q, %q) = %q, %v; want an error of the file system", tc.synsets, tc.arg, got, err)
			}
		case err != nil || got != tc.want:
			t.Errorf("SpecFor(%q, %q) = %q, %v; want %q", tc.synsets, tc.arg, got, err, tc.want)
		}
	}
	// A missing folder is named with the flag, and the kinds a spec may name.
	missing := filepath.Join(dir, "nope")
	if _, err := SpecFor("", missing); err == nil || err.Error() != "--data "+missing+
		": no such folder (give a data set folder, or a spec KIND[:DIR] with KIND one of fashion-mnist, mnist, quickdraw, cifar10, cifar100, folder, cub, nabirds, synthetic)" {
		t.Errorf("missing folder: %v", err)
	}
}

func TestKindAndLabelSet(t *testing.T) {
	cases := []struct {
		synsets, spec, kind, set string // set: the label set's name, "" for none
		err                      bool
	}{
		{spec: "fashion-mnist:/d?scale=1", kind: "fashion-mnist", set: "fashion-mnist"},
		{spec: "cifar100?flip=0", kind: "cifar100", set: "cifar100"},
		{spec: "synthetic?n=96&classes=4", kind: "synthetic"},
		{spec: "folder:/data/x", kind: "folder"},
		{synsets: "cifar100", spec: "folder:/data/x", kind: "folder", set: "cifar100"},
		{synsets: "fashion-mnst", spec: "fashion-mnist", kind: "fashion-mnist", err: true},
	}
	for _, tc := range cases {
		if k := Kind(tc.spec); k != tc.kind {
			t.Errorf("Kind(%q) = %q, want %q", tc.spec, k, tc.kind)
		}
		set, err := LabelSet(tc.synsets, tc.spec)
		name := ""
		if set != nil {
			name = set.Name
		}
		if (err != nil) != tc.err || name != tc.set {
			t.Errorf("LabelSet(%q, %q) = %q, %v; want %q (error %v)", tc.synsets, tc.spec, name, err, tc.set, tc.err)
		}
	}
}

func TestOpenRun(t *testing.T) {
	const spec = "synthetic?n=40&test=8&classes=4&shape=1,4,4"
	for _, tc := range []struct {
		synsets  string
		fraction float64
		set      string
		whole    bool // Indices nil: the whole training split
		err      string
	}{
		{fraction: 1, whole: true},
		{fraction: 0.25},
		{synsets: "fashion-mnist", fraction: 1, err: "--synsets fashion-mnist has 10 classes, the data " + spec + " has 4"},
		{synsets: "fashion-mnst", fraction: 1, err: "--synsets: "},
	} {
		d, err := OpenRun(spec, tc.synsets, tc.fraction, 1)
		if tc.err != "" {
			if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
				t.Errorf("%+v: %v, want %q", tc, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%+v: %v", tc, err)
		}
		if d.Train.Len() != 40 || d.Test.Len() != 8 || d.Set != nil || tc.whole != (d.Indices == nil) {
			t.Errorf("%+v: %d/%d examples, set %v, indices %v", tc, d.Train.Len(), d.Test.Len(), d.Set, d.Indices)
		}
		if want, _ := Fraction(d.Train, tc.fraction, 1); !tc.whole && (len(want) >= 40 || !slices.Equal(d.Indices, want)) {
			t.Errorf("%+v: indices %v, want Fraction's %v", tc, d.Indices, want)
		}
	}
}
