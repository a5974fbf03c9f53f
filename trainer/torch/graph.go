package torch

import (
	"errors"
	"fmt"
	"strings"
)

// An architecture is data: a Spec holds two trees of Nodes, Features (the
// input to the penultimate vector) and Head (that vector to the logits),
// which the C++ side instantiates as nested modules and runs by walking the
// tree. A family of networks is a Go function that composes nodes
// (trainer/models); the shim knows only the node kinds below.
//
// Names: a node with a Name is a module of that name inside the nearest
// named ancestor; a node without one is transparent (its children belong to
// the enclosing module). So torchvision's Bottleneck is a named Seq whose
// children are a transparent Sum of a transparent Seq (conv1, bn1, …) and a
// named Seq "downsample" holding "0" and "1": its parameters are
// layer1.0.conv1.weight and layer1.0.downsample.0.weight, as in
// torchvision.

// Op is the kind of a Node.
type Op int32

const (
	OpSeq           Op = iota // children in order
	OpConv                    // Conv2d(In, Out, Kernel, Stride, Pad, Groups, Bias)
	OpBatchNorm               // BatchNorm2d(Out; Eps, Momentum) on a map, BatchNorm1d on a vector
	OpLinear                  // Linear(In, Out, Bias)
	OpReLU                    // max(x, 0)
	OpMaxPool                 // MaxPool2d(Kernel, Stride, Pad, Ceil)
	OpAvgPool                 // AvgPool2d(Kernel, Stride, Pad, Ceil, count_include_pad = !ExcludePad)
	OpGlobalAvgPool           // adaptive average pool to 1×1 (keeps N×C×1×1)
	OpFlatten                 // N×… → N×(…)
	OpDropout                 // dropout with probability P in training
	OpSigmoid                 // logistic function
	OpSum                     // children on the same input, summed; child 0 scaled by Scale
	OpCat                     // children on the same input, concatenated along channels
	OpMul                     // children on the same input, multiplied (broadcasting): gates
	OpIdentity                // x
	OpPReLU                   // PReLU with one learnt slope per channel (Out), PyTorch's init 0.25
	numOps
)

var opNames = [...]string{"seq", "conv", "batchnorm", "linear", "relu", "maxpool", "avgpool", "gap", "flatten",
	"dropout", "sigmoid", "sum", "cat", "mul", "identity", "prelu"}

func (o Op) String() string { return enumName(opNames[:], o, "Op") }

// container reports whether nodes of kind o hold children.
func (o Op) container() bool { return o == OpSeq || o == OpSum || o == OpCat || o == OpMul }

// params reports whether nodes of kind o hold parameters (and so need a
// name: their module's).
func (o Op) params() bool {
	return o == OpConv || o == OpBatchNorm || o == OpLinear || o == OpPReLU
}

// WeightInit selects how a convolution or linear layer is initialised; batch norm
// always starts at weight 1, bias 0.
type WeightInit int32

const (
	InitDefault       WeightInit = iota // PyTorch's reset_parameters (Kaiming-uniform, a = √5)
	InitKaimingFanOut                   // conv weight ~ N(0, 2/fan_out) (torchvision ResNet, timm SENet, MSR init)
	InitKaimingFanIn                    // conv weight ~ N(0, 2/fan_in) (torchvision DenseNet)
	InitZeroBias                        // linear: default weight, bias 0 (torchvision DenseNet)
)

// Node is one operation of an architecture, or a container of others.
type Node struct {
	Op       Op
	Name     string // module name; "" = transparent
	In, Out  int    // conv: channels; linear: features; batch norm: Out
	Kernel   [2]int // conv and pools (height, width)
	Stride   [2]int // conv and pools; zero = 1 (conv) or the kernel (pools)
	Pad      [2]int
	Groups   int     // conv; zero = 1
	Bias     bool    // conv, linear
	Ceil     bool    // pools: ceil_mode
	NoPadAvg bool    // avg pool: count_include_pad = false
	Eps      float64 // batch norm; zero = 1e-5
	Momentum float64 // batch norm; zero = 0.1
	P        float64 // dropout probability
	Scale    float64 // sum: factor of child 0; zero = 1
	Init     WeightInit
	Children []Node
}

// Spec describes an architecture for an input shape and class count: the
// node trees of a built-in network, or a TorchScript file.
type Spec struct {
	InC, InH, InW int // input shape
	NumClasses    int
	Features      Node // input → penultimate vector (N×D)
	Head          Node // penultimate vector → N×NumClasses logits
	// Script, when set, is a TorchScript module file (torch.jit.save) that
	// replaces Features and Head: see NewModel.
	Script string
	// Loaded, when set, is Script loaded and checked (LoadScript):
	// NewModel copies it instead of loading the file again.
	Loaded *Script `json:"-"`
	// Reinit starts a Script model from PyTorch's default initialisation
	// (drawn from libtorch's generator) instead of the file's weights: the
	// second peer of a mutual-learning run must not start as a copy.
	Reinit bool
	// Levels, when set, give the model one more trainable linear head per
	// level on the head's input features (HAF's level heads, which
	// NewModel registers: lt_model_add_levels): coarser partitions of the classes,
	// finest first, each nested in the next. The heads are part of the
	// model's state (under LevelHeadsPrefix), not of its forward pass.
	Levels []Level
}

// Level is one partition of the classes into Groups groups: Group[c] is
// the group of class c.
type Level struct {
	Groups int
	Group  []int
}

// LevelHeadsPrefix begins the state names of a model's level heads
// (level_heads.1.weight, …): the final weights files leave them out, so
// that lcl eval and --init read them as the plain model they evaluate.
const LevelHeadsPrefix = "level_heads."

// Leaf and container constructors, so architectures read like torchvision's.

// Seq runs children in order; name "" makes it transparent.
func Seq(name string, children ...Node) Node {
	return Node{Op: OpSeq, Name: name, Children: children}
}

// Conv is a bias-free k×k convolution with padding k/2 (torchvision's conv3x3
// and conv1x1) initialised Kaiming-normal with fan-out.
func Conv(name string, in, out, k, stride int) Node {
	return Node{Op: OpConv, Name: name, In: in, Out: out, Kernel: [2]int{k, k}, Stride: [2]int{stride, stride},
		Pad: [2]int{k / 2, k / 2}, Init: InitKaimingFanOut}
}

// BN is batch norm with PyTorch's defaults (eps 1e-5, momentum 0.1):
// BatchNorm2d on a C×H×W map, BatchNorm1d on a vector of c (statistics
// over the batch alone; the same parameters and buffers).
func BN(name string, c int) Node { return Node{Op: OpBatchNorm, Name: name, Out: c} }

// Linear is a fully connected layer with a bias, PyTorch's initialisation.
func Linear(name string, in, out int) Node {
	return Node{Op: OpLinear, Name: name, In: in, Out: out, Bias: true}
}

// ReLU, Flatten, GAP (global average pool), Sigmoid and Identity take no
// parameters.
func ReLU() Node     { return Node{Op: OpReLU} }
func Flatten() Node  { return Node{Op: OpFlatten} }
func GAP() Node      { return Node{Op: OpGlobalAvgPool} }
func Sigmoid() Node  { return Node{Op: OpSigmoid} }
func Identity() Node { return Node{Op: OpIdentity} }

// MaxPool and AvgPool are k×k pools with the given stride and padding.
func MaxPool(k, stride, pad int) Node {
	return Node{Op: OpMaxPool, Kernel: [2]int{k, k}, Stride: [2]int{stride, stride}, Pad: [2]int{pad, pad}}
}
func AvgPool(k, stride, pad int) Node {
	return Node{Op: OpAvgPool, Kernel: [2]int{k, k}, Stride: [2]int{stride, stride}, Pad: [2]int{pad, pad}}
}

// Dropout drops with probability p in training (nothing when p = 0).
func Dropout(p float64) Node { return Node{Op: OpDropout, P: p} }

// Sum adds its branches applied to the same input (a residual connection:
// Sum(body, Identity())).
func Sum(branches ...Node) Node { return Node{Op: OpSum, Children: branches} }

// Cat concatenates its branches along the channels.
func Cat(branches ...Node) Node { return Node{Op: OpCat, Children: branches} }

// Mul multiplies its branches (broadcasting): Mul(Identity(), gate).
func Mul(branches ...Node) Node { return Node{Op: OpMul, Children: branches} }

// PReLU is max(x, 0) + a_c·min(x, 0) with a learnt slope a_c per channel
// (or per feature of a vector), each starting at 0.25 as torch.nn.PReLU's:
// an activation that keeps negative values, which HAFrame's projection
// needs (trainer/models: proj).
func PReLU(name string, c int) Node { return Node{Op: OpPReLU, Name: name, Out: c} }

// Shape is a tensor shape without the batch dimension: C×H×W, or a vector
// of C when Vec.
type Shape struct {
	C, H, W int
	Vec     bool
}

func (s Shape) String() string {
	if s.Vec {
		return fmt.Sprint(s.C)
	}
	return fmt.Sprintf("%d×%d×%d", s.C, s.H, s.W)
}

func (s Shape) numel() int64 {
	if s.Vec {
		return int64(s.C)
	}
	return int64(s.C) * int64(s.H) * int64(s.W)
}

func or1(v int) int {
	if v == 0 {
		return 1
	}
	return v
}

func poolOut(n, k, s, p int, ceil bool) int {
	num := n + 2*p - k
	if num < 0 {
		return 0
	}
	if !ceil {
		return num/s + 1
	}
	out := (num+s-1)/s + 1
	// PyTorch: the last window must start inside the (left-padded) input.
	if (out-1)*s >= n+p {
		out--
	}
	return out
}

// Walk calls fn on n and its descendants in pre-order with each node's
// dotted module path (the names of its named ancestors and itself).
func (n *Node) Walk(fn func(path string, n *Node) error) error {
	return n.walk("", fn)
}

func (n *Node) walk(prefix string, fn func(string, *Node) error) error {
	path := prefix
	if n.Name != "" {
		path = join(prefix, n.Name)
	}
	if err := fn(path, n); err != nil {
		return err
	}
	for i := range n.Children {
		if err := n.Children[i].walk(path, fn); err != nil {
			return err
		}
	}
	return nil
}

func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

// Infer returns the output shape of n for input in, checking channel counts
// and sizes on the way.
func (n *Node) Infer(in Shape) (Shape, error) {
	out, err := n.infer(in)
	if err != nil && n.Name != "" {
		return out, fmt.Errorf("%s: %w", n.Name, err)
	}
	return out, err
}

func (n *Node) infer(in Shape) (Shape, error) {
	needMap := func() error {
		if in.Vec {
			return fmt.Errorf("%v needs a C×H×W input, got a vector of %d", n.Op, in.C)
		}
		return nil
	}
	if !n.Op.container() && len(n.Children) > 0 {
		return in, fmt.Errorf("%v has children", n.Op)
	}
	switch n.Op {
	case OpSeq:
		s := in
		for i := range n.Children {
			var err error
			if s, err = n.Children[i].Infer(s); err != nil {
				return s, err
			}
		}
		return s, nil
	case OpConv:
		if err := needMap(); err != nil {
			return in, err
		}
		g := or1(n.Groups)
		if n.In != in.C || n.In <= 0 || n.Out <= 0 || n.In%g != 0 || n.Out%g != 0 {
			return in, fmt.Errorf("conv %d→%d (groups %d) on %d channels", n.In, n.Out, g, in.C)
		}
		h, w, err := n.window(in, "conv", or1(n.Stride[0]), or1(n.Stride[1]), false)
		if err != nil {
			return in, err
		}
		return Shape{C: n.Out, H: h, W: w}, nil
	case OpBatchNorm, OpPReLU:
		// Both act per channel of a map or per feature of a vector.
		if n.Out != in.C {
			return in, fmt.Errorf("%v of %d features on %d channels", n.Op, n.Out, in.C)
		}
		return in, nil
	case OpLinear:
		if !in.Vec || n.In != in.C || n.Out <= 0 {
			return in, fmt.Errorf("linear %d→%d on %v", n.In, n.Out, in)
		}
		return Shape{C: n.Out, Vec: true}, nil
	case OpReLU, OpSigmoid, OpIdentity:
		return in, nil
	case OpDropout:
		if n.P < 0 || n.P >= 1 {
			return in, fmt.Errorf("dropout probability %v", n.P)
		}
		return in, nil
	case OpMaxPool, OpAvgPool:
		if err := needMap(); err != nil {
			return in, err
		}
		sh, sw := n.Stride[0], n.Stride[1]
		if sh == 0 {
			sh, sw = n.Kernel[0], n.Kernel[1]
		}
		h, w, err := n.window(in, "pool", sh, sw, n.Ceil)
		if err != nil {
			return in, err
		}
		return Shape{C: in.C, H: h, W: w}, nil
	case OpGlobalAvgPool:
		if err := needMap(); err != nil {
			return in, err
		}
		return Shape{C: in.C, H: 1, W: 1}, nil
	case OpFlatten:
		return Shape{C: int(in.numel()), Vec: true}, nil
	case OpSum, OpMul, OpCat:
		return n.inferBranches(in)
	}
	return in, fmt.Errorf("unknown node kind %v", n.Op)
}

// inferBranches is the shape out of a sum, product or concatenation of
// n's branches, each given in.
func (n *Node) inferBranches(in Shape) (Shape, error) {
	if len(n.Children) == 0 {
		return in, fmt.Errorf("%v without branches", n.Op)
	}
	var out Shape
	for i := range n.Children {
		s, err := n.Children[i].Infer(in)
		if err != nil {
			return s, err
		}
		switch {
		case i == 0:
			out = s
		case n.Op == OpCat:
			if s.Vec || out.Vec || s.H != out.H || s.W != out.W {
				return s, fmt.Errorf("cat of %v and %v", out, s)
			}
			out.C += s.C
		case n.Op == OpMul:
			// A gate N×C×1×1 broadcasts over a map.
			if s.C != out.C || s.Vec != out.Vec || !(s.H == out.H && s.W == out.W || s.H == 1 && s.W == 1) {
				return s, fmt.Errorf("product of %v and %v", out, s)
			}
		default:
			if s != out {
				return s, fmt.Errorf("sum of %v and %v", out, s)
			}
		}
	}
	return out, nil
}

// window is the output size of n's conv or pool window (what) sliding over
// in with strides sh and sw.
func (n *Node) window(in Shape, what string, sh, sw int, ceil bool) (h, w int, err error) {
	if n.Kernel[0] <= 0 || n.Kernel[1] <= 0 {
		return 0, 0, fmt.Errorf("%s kernel %v", what, n.Kernel)
	}
	h = poolOut(in.H, n.Kernel[0], sh, n.Pad[0], ceil)
	w = poolOut(in.W, n.Kernel[1], sw, n.Pad[1], ceil)
	if h <= 0 || w <= 0 {
		return 0, 0, fmt.Errorf("%s %dx%d on a %d×%d map: input too small", what, n.Kernel[0], n.Kernel[1], in.H, in.W)
	}
	return h, w, nil
}

// Params is the number of trainable scalars of n and its descendants.
func (n *Node) Params() int64 {
	var p int64
	n.Walk(func(_ string, m *Node) error {
		switch m.Op {
		case OpConv:
			p += int64(m.Out) * int64(m.In/or1(m.Groups)) * int64(m.Kernel[0]) * int64(m.Kernel[1])
			if m.Bias {
				p += int64(m.Out)
			}
		case OpBatchNorm:
			p += 2 * int64(m.Out)
		case OpPReLU:
			p += int64(m.Out)
		case OpLinear:
			p += int64(m.Out) * int64(m.In)
			if m.Bias {
				p += int64(m.Out)
			}
		}
		return nil
	})
	return p
}

// Check verifies the spec's trees for its input: channel counts, sizes,
// names (every parameterised node named, no name twice) and that the head
// ends in NumClasses logits. It returns the width of the penultimate
// features.
func (s Spec) Check() (featureDim int, err error) {
	if s.Script != "" {
		return 0, errors.New("torch: a TorchScript spec has no node trees to check")
	}
	if s.InC <= 0 || s.InH <= 0 || s.InW <= 0 || s.NumClasses < 1 {
		return 0, fmt.Errorf("torch: spec: input %d×%d×%d with %d classes", s.InC, s.InH, s.InW, s.NumClasses)
	}
	seen := map[string]string{}
	for _, part := range []struct {
		what string
		n    *Node
	}{{"features", &s.Features}, {"head", &s.Head}} {
		err := part.n.Walk(func(path string, m *Node) error {
			if m.Op.params() {
				if m.Name == "" {
					return fmt.Errorf("%s: a %v at %q has no name", part.what, m.Op, path)
				}
				if prev, dup := seen[path]; dup {
					return fmt.Errorf("%s: module %q defined twice (also in %s)", part.what, path, prev)
				}
				seen[path] = part.what
			}
			if strings.Contains(m.Name, ".") {
				return fmt.Errorf("%s: module name %q contains a dot", part.what, m.Name)
			}
			return nil
		})
		if err != nil {
			return 0, fmt.Errorf("torch: spec: %w", err)
		}
	}
	f, err := s.Features.Infer(Shape{C: s.InC, H: s.InH, W: s.InW})
	if err != nil {
		return 0, fmt.Errorf("torch: spec: features on %d×%d×%d input: %w", s.InC, s.InH, s.InW, err)
	}
	if !f.Vec {
		return 0, fmt.Errorf("torch: spec: features end in a %v map, want a vector (pool and flatten)", f)
	}
	out, err := s.Head.Infer(f)
	if err != nil {
		return 0, fmt.Errorf("torch: spec: head: %w", err)
	}
	if !out.Vec || out.C != s.NumClasses {
		return 0, fmt.Errorf("torch: spec: head gives %v outputs, want %d classes", out, s.NumClasses)
	}
	return f.C, nil
}

// NumParams is the number of trainable scalars the spec's network has
// (0 for a TorchScript spec, which only libtorch can count).
func (s Spec) NumParams() int64 { return s.Features.Params() + s.Head.Params() }

// HeadNames are the module paths of the head's parameterised layers
// (e.g. "fc", "classifier", "last_linear"): the classifier that
// --init-skip re-initialises for a new number of classes.
func (s Spec) HeadNames() []string {
	var out []string
	s.Head.Walk(func(path string, m *Node) error {
		if m.Op.params() {
			out = append(out, path)
		}
		return nil
	})
	return out
}
