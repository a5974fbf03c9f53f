package models

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/trainer/torch"
)

func TestGetOptionsAndErrors(t *testing.T) {
	r := Builtin()
	fm := Input{C: 1, H: 28, W: 28, NumClasses: 10}
	cifar := Input{C: 3, H: 32, W: 32, NumClasses: 100}
	img := Input{C: 3, H: 224, W: 224, NumClasses: 1000}
	cases := []struct {
		spec   string
		in     Input
		params int64    // 0: not checked
		keys   []string // state names that must exist
		absent []string // names that must not
		err    string
	}{
		{"mlp", fm, 784*256 + 256 + 256*128 + 128 + 128*10 + 10, []string{"fc1.weight", "fc2.bias", "fc.weight"}, nil, ""},
		{"mlp:hidden=64,dropout=0.5", fm, 784*64 + 64 + 64*10 + 10, []string{"fc1.weight"}, []string{"fc2.weight"}, ""},
		{"cnn", fm, 1*32*9 + 64 + 32*64*9 + 128 + 64*7*7*128 + 128 + 128*10 + 10, []string{"conv2.weight", "bn2.weight", "fc1.weight", "fc.bias"}, []string{"conv1.bias"}, ""},
		{"cnn:channels=16x32,bn=0", fm, 16*9 + 16 + 16*32*9 + 32 + 32*7*7*128 + 128 + 1290, []string{"conv1.bias"}, []string{"bn1.weight"}, ""},
		{"resnet18", cifar, 0, []string{"conv1.weight", "layer2.0.downsample.0.weight", "layer2.0.downsample.1.bias", "fc.bias"}, nil, ""},
		{"resnet50:stem=imagenet,width=16", cifar, 0, []string{"layer1.0.conv3.weight", "layer1.0.downsample.0.weight"}, nil, ""},
		{"resnext101-32x8d:layers=1x1x1x1", img, 0, []string{"layer1.0.conv2.weight", "layer4.0.bn3.weight"}, []string{"layer1.1.conv1.weight"}, ""},
		// WRN-16-2 on CIFAR-10: 691,674 parameters (Zagoruyko & Komodakis' 0.7M).
		{"wrn:depth=16,widen=2", cifar10, 691674, []string{"layer2.0.shortcut.0.weight", "layer1.1.bn1.weight", "bn.weight"}, []string{"layer1.1.shortcut.0.weight"}, ""},
		{"senet154:layers=1x1x1x1", img, 0, []string{"layer0.conv3.weight", "layer1.0.se_module.fc1.bias", "layer2.0.downsample.0.weight", "last_linear.weight"}, nil, ""},
		{"inception-resnet-v2:repeats=1x1x1", Input{C: 3, H: 75, W: 75, NumClasses: 5}, 0,
			[]string{"conv2d_1a.conv.weight", "mixed_5b.branch3.1.bn.running_var", "repeat.0.conv2d.bias", "repeat_1.0.branch1.2.conv.weight", "mixed_7a.branch2.2.bn.weight", "block8.conv2d.weight", "conv2d_7b.bn.bias", "classif.weight"},
			[]string{"repeat.1.conv2d.bias"}, ""},
		{"densenet-bc-190-40:depth=10", cifar, 0, []string{"features.conv0.weight", "features.denseblock3.denselayer1.conv2.weight", "features.transition2.conv.weight", "features.norm5.weight", "classifier.bias"}, []string{"features.norm0.weight"}, ""},
		{"densenet121:blocks=2x2,growth=8,init=16", img, 0, []string{"features.norm0.weight", "features.transition1.norm.running_mean", "features.denseblock2.denselayer2.norm2.weight"}, []string{"features.transition2.conv.weight"}, ""},
		{"densenet:depth=13,bottleneck=0,growth=4", cifar, 0, []string{"features.denseblock1.denselayer3.conv1.weight"}, []string{"features.denseblock1.denselayer1.norm2.weight"}, ""},
		// HAFrame's projection (proj=N, any model): Linear(8, 6) without a
		// bias, BN(6), two point-residual layers of two bias-free 6×6
		// linear layers, two BNs and two PReLUs each; the head reads 6.
		{"mlp:hidden=8,proj=6", fm, 784*8 + 8 + 8*6 + 2*6 + 2*(2*6*6+2*2*6+2*6) + 6*10 + 10,
			[]string{"projection.linear.weight", "projection.bn.running_var", "projection.residual_layer1.linear1.weight",
				"projection.residual_layer2.act_func2.weight", "projection.residual_layer2.bn2.bias", "fc.weight"},
			[]string{"projection.linear.bias", "projection.residual_layer1.linear1.bias"}, ""},
		{"resnet18:layers=1x1x1x1,width=8,proj=12", cifar, 0, []string{"layer4.0.conv2.weight", "projection.linear.weight", "fc.weight"}, nil, ""},
		{"cnn:proj=0", fm, 0, nil, nil, `option proj="0": want a positive integer up to 16384 (HAFrame's projection`},
		{"cnn:proj=16385", fm, 0, nil, nil, `option proj="16385": want a positive integer up to 16384`},
		{"densenet:proj=-3", cifar, 0, nil, nil, `option proj="-3"`},
		{"cnn:projection=8", fm, 0, nil, nil, "(options: channels, fc, dropout, bn, proj)"},
		{"wrn:depth=17", cifar, 0, nil, nil, "6n+4"},
		{"resnet18:stem=odd", cifar, 0, nil, nil, "stem"},
		{"resnet18:groups=4", cifar, 0, nil, nil, "bottleneck"},
		{"cnn:colour=red", fm, 0, nil, nil, "bad option"},
		{"cnn:bn=maybe", fm, 0, nil, nil, "want 1 (batch norm"},
		{"vgg", fm, 0, nil, nil, "unknown model"},
		{"cnn:channels=8x8x8x8x8", fm, 0, nil, nil, "do not fit"},
		{"densenet:depth=100,blocks=6x6", cifar, 0, nil, nil, "not both"},
		{"densenet:compression=0", cifar, 0, nil, nil, "(0,1]"},
		{"inception-resnet-v2", cifar, 0, nil, nil, "input too small"},
		{"inception-resnet-v2:repeats=1x1", img, 0, nil, nil, "three counts"},
		{"senet154:groups=7", img, 0, nil, nil, "groups"},
		{"torchscript:/nonexistent/model.pt", cifar, 0, nil, nil, "TorchScript file"},
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
		if got.InC != tc.in.C || got.InH != tc.in.H || got.NumClasses != tc.in.NumClasses {
			t.Errorf("Get(%q): input %+v", tc.spec, got)
		}
		if tc.params != 0 && got.NumParams() != tc.params {
			t.Errorf("Get(%q): %d parameters, want %d", tc.spec, got.NumParams(), tc.params)
		}
		names := stateNames(got)
		for _, k := range tc.keys {
			if !names[k] {
				t.Errorf("Get(%q): no %q", tc.spec, k)
			}
		}
		for _, k := range tc.absent {
			if names[k] {
				t.Errorf("Get(%q): unexpected %q", tc.spec, k)
			}
		}
	}
	if err := r.Register(Model{Name: "cnn"}); err == nil {
		t.Error("duplicate registration accepted")
	}
	script := filepath.Join(t.TempDir(), "m.pt")
	os.WriteFile(script, []byte("x"), 0o644)
	// The file is checked before libtorch sees it (script_test.go: a
	// real one loads).
	if _, err := r.Get("torchscript:"+script, cifar); err == nil || !strings.Contains(err.Error(), "not a TorchScript archive") {
		t.Errorf("torchscript spec of a file that is no archive: %v", err)
	}
}

// stateNames are the parameter and buffer names the spec's network has,
// derived from its trees the way the C++ side registers them.
func stateNames(s torch.Spec) map[string]bool {
	names := map[string]bool{}
	for _, root := range []*torch.Node{&s.Features, &s.Head} {
		root.Walk(func(path string, n *torch.Node) error {
			switch n.Op {
			case torch.OpConv, torch.OpLinear:
				names[path+".weight"] = true
				if n.Bias {
					names[path+".bias"] = true
				}
			case torch.OpBatchNorm:
				for _, k := range []string{"weight", "bias", "running_mean", "running_var", "num_batches_tracked"} {
					names[path+"."+k] = true
				}
			case torch.OpPReLU:
				names[path+".weight"] = true
			}
			return nil
		})
	}
	return names
}

// The exact parameter counts of torchvision's and timm's builders for the
// reference inputs (ImageNet: 1000 classes), and the published counts.
func TestParameterCountsEqualThePublishedOnes(t *testing.T) {
	exact := map[string]int64{
		"resnet18": 11689512, "resnet34": 21797672, "resnet50": 25557032, "resnet101": 44549160,
		"resnext50-32x4d": 25028904, "resnext101-32x8d": 88791336, // torchvision
		"densenet121": 7978856, "densenet161": 28681000, "densenet169": 14149480, "densenet201": 20013928, // torchvision
		"senet154": 115088984, "inception-resnet-v2": 55843464, // timm
		"densenet-bc-190-40": 25624430, "wrn-28-10": 36536884, // CIFAR-10 and CIFAR-100 heads
	}
	r := Builtin()
	paper := 0
	for _, m := range r.List() {
		s, err := r.Get(m.Name, m.Reference)
		if err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
		n := s.NumParams()
		if want, ok := exact[m.Name]; ok && n != want {
			t.Errorf("%s: %d parameters, torchvision/timm have %d", m.Name, n, want)
		}
		if m.Paper {
			paper++
			if m.Published == "" {
				t.Errorf("%s: a paper architecture without a published count", m.Name)
			}
		}
		if m.Published == "" {
			continue
		}
		dec := 0
		if i := strings.IndexByte(m.Published, '.'); i >= 0 {
			dec = len(m.Published) - i - 1
		}
		pub, _ := strconv.ParseFloat(m.Published, 64)
		if got := math.Round(float64(n)/1e6*math.Pow(10, float64(dec))) / math.Pow(10, float64(dec)); got != pub {
			t.Errorf("%s: %d parameters = %.*fM, published %sM", m.Name, n, dec, got, m.Published)
		}
	}
	if paper != 9 {
		t.Errorf("%d paper architectures registered, want 9", paper)
	}
}

// The C++ side builds exactly the network Go describes: the same parameter
// count and the same state names, for every family (reduced depths).
func TestLibtorchBuildsTheDescribedNetwork(t *testing.T) {
	r := Builtin()
	for _, tc := range []struct {
		spec string
		in   Input
	}{
		{"cnn", Input{C: 1, H: 28, W: 28, NumClasses: 10}},
		{"cnn:bn=0,proj=12", Input{C: 1, H: 28, W: 28, NumClasses: 10}},
		{"resnet18:layers=1x1x1x1,width=8,proj=16", Input{C: 3, H: 32, W: 32, NumClasses: 10}},
		{"resnext101-32x8d:layers=1x1x1x1,group-width=2", Input{C: 3, H: 32, W: 32, NumClasses: 10}},
		{"wrn:depth=10,widen=2,dropout=0.3", Input{C: 3, H: 32, W: 32, NumClasses: 10}},
		{"senet154:layers=1x1x1x1,groups=8", Input{C: 3, H: 32, W: 32, NumClasses: 10}},
		{"inception-resnet-v2:repeats=1x1x1", Input{C: 3, H: 75, W: 75, NumClasses: 10}},
		{"densenet-bc-190-40:depth=10,growth=4", Input{C: 3, H: 32, W: 32, NumClasses: 10}},
		{"densenet121:blocks=2x2,growth=4,init=8,dropout=0.2", Input{C: 3, H: 64, W: 64, NumClasses: 10}},
	} {
		s, err := r.Get(tc.spec, tc.in)
		if err != nil {
			t.Fatal(err)
		}
		m, err := torch.NewModel(s, "cpu")
		if err != nil {
			t.Fatalf("%s: %v", tc.spec, err)
		}
		if got, err := m.NumParams(); err != nil || got != s.NumParams() {
			t.Errorf("%s: libtorch has %d parameters (%v), the description %d", tc.spec, got, err, s.NumParams())
		}
		st, err := m.State().Copy()
		if err != nil {
			t.Fatal(err)
		}
		want := stateNames(s)
		var got []string
		for _, n := range st {
			got = append(got, n.Name)
			if !want[n.Name] {
				t.Errorf("%s: libtorch has %q, the description does not", tc.spec, n.Name)
			}
		}
		if len(got) != len(want) {
			t.Errorf("%s: libtorch has %d tensors, the description %d", tc.spec, len(got), len(want))
		}
		if fd, _ := s.Check(); m.FeatureDim() != fd {
			t.Errorf("%s: feature width %d, want %d", tc.spec, m.FeatureDim(), fd)
		}
		m.Close()
		if slices.Contains(got, "") {
			t.Errorf("%s: an unnamed tensor", tc.spec)
		}
	}
}
