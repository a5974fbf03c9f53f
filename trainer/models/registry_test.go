package models

import (
	"slices"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/trainer/torch"
)

func TestGet(t *testing.T) {
	r := Builtin()
	fm := Input{C: 1, H: 28, W: 28, NumClasses: 10}
	cifar := Input{C: 3, H: 32, W: 32, NumClasses: 100}
	img := Input{C: 3, H: 224, W: 224, NumClasses: 1000}
	cases := []struct {
		spec string
		in   Input
		want torch.Spec
		err  string
	}{
		{"mlp", fm, torch.Spec{Kind: torch.MLP, Hidden: []int{256, 128}}, ""},
		{"mlp:hidden=64,dropout=0.5", fm, torch.Spec{Kind: torch.MLP, Hidden: []int{64}, Dropout: 0.5}, ""},
		{"cnn", fm, torch.Spec{Kind: torch.CNN, Hidden: []int{32, 64, 128}}, ""},
		{"cnn:channels=16x32,bn=0", fm, torch.Spec{Kind: torch.CNN, Hidden: []int{16, 32, 128}, NoBN: true}, ""},
		{"cnn:bn=maybe", fm, torch.Spec{}, "want 1 (batch norm"},
		{"resnet18", cifar, torch.Spec{Kind: torch.ResNet, Layers: []int{2, 2, 2, 2}, Width: 64, CIFARStem: true}, ""},
		{"resnet50", img, torch.Spec{Kind: torch.ResNet, Layers: []int{3, 4, 6, 3}, Bottleneck: true, Width: 64}, ""},
		{"resnet18:stem=imagenet", cifar, torch.Spec{Kind: torch.ResNet, Layers: []int{2, 2, 2, 2}, Width: 64}, ""},
		{"wrn-28-10", cifar, torch.Spec{Kind: torch.WRN, Depth: 28, Widen: 10}, ""},
		{"wrn:depth=16,widen=2", cifar, torch.Spec{Kind: torch.WRN, Depth: 16, Widen: 2}, ""},
		{"wrn:depth=17", cifar, torch.Spec{}, "6n+4"},
		{"resnet18:stem=odd", cifar, torch.Spec{}, "stem"},
		{"cnn:colour=red", fm, torch.Spec{}, "bad option"},
		{"vgg", fm, torch.Spec{}, "unknown model"},
		{"cnn:channels=8x8x8x8x8", fm, torch.Spec{}, "do not fit"},
	}
	for _, tc := range cases {
		got, err := r.Get(tc.spec, tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Get(%q) error = %v, want %q", tc.spec, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Get(%q): %v", tc.spec, err)
			continue
		}
		tc.want.InC, tc.want.InH, tc.want.InW, tc.want.NumClasses = tc.in.C, tc.in.H, tc.in.W, tc.in.NumClasses
		if got.Kind != tc.want.Kind || !slices.Equal(got.Hidden, tc.want.Hidden) || !slices.Equal(got.Layers, tc.want.Layers) ||
			got.Bottleneck != tc.want.Bottleneck || got.Width != tc.want.Width || got.CIFARStem != tc.want.CIFARStem ||
			got.Depth != tc.want.Depth || got.Widen != tc.want.Widen || got.Dropout != tc.want.Dropout ||
			got.InC != tc.want.InC || got.NumClasses != tc.want.NumClasses {
			t.Errorf("Get(%q) = %+v, want %+v", tc.spec, got, tc.want)
		}
	}
	if err := r.Register(Model{Name: "cnn"}); err == nil {
		t.Error("duplicate registration accepted")
	}
	if names := len(r.List()); names != 8 {
		t.Errorf("List has %d models, want 8", names)
	}
}
