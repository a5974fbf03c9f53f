package models

import (
	"strings"
	"testing"

	"github.com/lcl-project/lcl/internal/bounded/boundedtest"
)

// The small CNN on 1×28×28, counted by hand: parameters conv1 1·32·9,
// bn1 2·32, conv2 32·64·9, bn2 2·64, fc1 3136·128+128, fc 128·10+10;
// outputs conv1, bn1, relu 32·28·28 each, pool 32·14·14, conv2, bn2, relu
// 64·14·14 each, pool and flatten 3136 each, fc1 and relu 128 each, fc 10.
func TestEstimateSmallCNNByHand(t *testing.T) {
	s, err := Builtin().Get("cnn", Input{C: 1, H: 28, W: 28, NumClasses: 10})
	if err != nil {
		t.Fatal(err)
	}
	z, err := Estimate(s)
	if err != nil {
		t.Fatal(err)
	}
	want := Size{
		Params:      288 + 64 + 18432 + 128 + 3136*128 + 128 + 1280 + 10,
		Input:       784,
		Activations: 3*25088 + 6272 + 3*12544 + 3136 + 3136 + 128 + 128 + 10,
		Peak:        25088,
	}
	if z != want {
		t.Errorf("Estimate = %+v, want %+v", z, want)
	}
	// ResNet-18 on ImageNet: torchvision's 11,689,512 parameters.
	s, _ = Builtin().Get("resnet18", imageNet)
	if z, _ := Estimate(s); z.Params != 11689512 {
		t.Errorf("resnet18: %d parameters, want 11689512", z.Params)
	}
}

// CheckFits names what does not fit: the model's parameters, or the batch.
func TestCheckFits(t *testing.T) {
	z := Size{Params: 100 << 20, Input: 3 * 224 * 224, Activations: 10 << 20, Peak: 1 << 20}
	for _, c := range []struct {
		batch  int
		train  bool
		avail  int64
		option string
		want   string
	}{
		{64, true, 1 << 30, "model", "105 M parameters: their weights, gradients and optimizer state need about 1.2 GiB, more than this machine's 1 GiB of memory"},
		{256, true, 8 << 30, "batch", "a training batch of 256 needs about 10.1 GiB for its inputs and activations (10.6 M scalars per example), more than the 6.8 GiB of memory this machine has left beside the model"},
		{64, true, 8 << 30, "", ""},
		{1e12, false, 8 << 30, "batch", "an evaluation batch of 1000000000000 needs about 7.8 EiB for its inputs and activations (2.25 M scalars per example)"},
		{256, false, 8 << 30, "", ""},
	} {
		err := CheckFits(z, c.batch, c.train, c.avail)
		tl, _ := err.(*TooLargeError)
		switch {
		case c.option == "" && err != nil:
			t.Errorf("batch %d in %d bytes: %v", c.batch, c.avail, err)
		case c.option != "" && (tl == nil || tl.Option != c.option || !strings.Contains(tl.Msg, c.want)):
			t.Errorf("batch %d in %d bytes: %v; want %s: %q", c.batch, c.avail, err, c.option, c.want)
		}
	}
}

// An option that would describe a network of millions of layers is
// refused before a node of it is built.
func TestOptionBound(t *testing.T) {
	var err error
	boundedtest.MaxAlloc(t, 1<<20, "densenet depth=60000004", func() {
		_, err = Builtin().Get("densenet-bc-190-40:depth=60000004", cifar100)
	})
	if err == nil || !strings.Contains(err.Error(), `option depth="60000004": want a positive integer up to 16384`) {
		t.Errorf("depth=60000004: %v", err)
	}
	if _, err := Builtin().Get("mlp:hidden=16x0", cifar10); err == nil {
		t.Error("hidden=16x0 accepted")
	}
}
