package shim

import (
	"fmt"
	"os"

	"google.golang.org/protobuf/reflect/protoreflect"

	sdk "github.com/lcl-project/lcl/plugins/internal/api"
	pb "github.com/lcl-project/lcl/plugins/proto"
)

func toParams(ps []sdk.Param) []*pb.Param {
	out := make([]*pb.Param, len(ps))
	for i, p := range ps {
		out[i] = &pb.Param{Name: p.Name, Type: string(p.Type), Default: p.Default, Help: p.Help}
	}
	return out
}

func fromParams(ps []*pb.Param) []sdk.Param {
	out := make([]sdk.Param, len(ps))
	for i, p := range ps {
		out[i] = sdk.Param{Name: p.GetName(), Type: sdk.ParamType(p.GetType()), Default: p.GetDefault(), Help: p.GetHelp()}
	}
	return out
}

// toMatrix is a small matrix (attributes) inline.
func toMatrix(m *sdk.Matrix) *pb.Matrix {
	pm, _ := encodeMatrix(m, Sharing{}) // inline: no file, no error
	return pm
}

// fromMatrix is an inline matrix; a shared one is refused (attributes are
// always inline).
func fromMatrix(m *pb.Matrix) (*sdk.Matrix, error) {
	if m.GetShared() != nil {
		return nil, fmt.Errorf("attribute matrix %q: attributes travel inline", m.GetShared().GetPath())
	}
	return decodeMatrix(m, "", false)
}

func toClasses(cs []sdk.Class) []*pb.Class {
	out := make([]*pb.Class, len(cs))
	for i, c := range cs {
		out[i] = &pb.Class{Index: int32(c.Index), Id: c.ID, Name: c.Name, Wnid: c.WNID}
	}
	return out
}

func fromClasses(cs []*pb.Class) []sdk.Class {
	out := make([]sdk.Class, len(cs))
	for i, c := range cs {
		out[i] = sdk.Class{Index: int(c.GetIndex()), ID: c.GetId(), Name: c.GetName(), WNID: c.GetWnid()}
	}
	return out
}

func toInt32s(xs []int) []int32 {
	if xs == nil {
		return nil
	}
	out := make([]int32, len(xs))
	for i, x := range xs {
		out[i] = int32(x)
	}
	return out
}

func fromInt32s(xs []int32) []int {
	if xs == nil {
		return nil
	}
	out := make([]int, len(xs))
	for i, x := range xs {
		out[i] = int(x)
	}
	return out
}

func toStages(ss []sdk.Stage) []*pb.Stage {
	out := make([]*pb.Stage, len(ss))
	for i, s := range ss {
		out[i] = &pb.Stage{Name: s.Name, Epochs: int32(s.Epochs), Models: int32(s.Peers), Teacher: int32(s.Teacher),
			Fresh: s.Fresh, Features: s.Features, PerStep: s.PerStep, Model: s.Model, ClassProbs: s.ClassProbs,
			Levels: toLevels(s.Levels)}
	}
	return out
}

func toLevels(ls []sdk.Level) []*pb.Level {
	if ls == nil {
		return nil
	}
	out := make([]*pb.Level, len(ls))
	for i, l := range ls {
		out[i] = &pb.Level{Groups: int32(l.Groups), Group: toInt32s(l.Group)}
	}
	return out
}

func fromLevels(ls []*pb.Level) []sdk.Level {
	if len(ls) == 0 {
		return nil
	}
	out := make([]sdk.Level, len(ls))
	for i, l := range ls {
		out[i] = sdk.Level{Groups: int(l.GetGroups()), Group: fromInt32s(l.GetGroup())}
	}
	return out
}

func fromStages(ss []*pb.Stage) []sdk.Stage {
	out := make([]sdk.Stage, len(ss))
	for i, s := range ss {
		out[i] = sdk.Stage{Name: s.GetName(), Epochs: int(s.GetEpochs()), Peers: int(s.GetModels()), Teacher: int(s.GetTeacher()),
			Fresh: s.GetFresh(), Features: s.GetFeatures(), PerStep: s.GetPerStep(), Model: s.GetModel(),
			ClassProbs: s.GetClassProbs(), Levels: fromLevels(s.GetLevels())}
	}
	return out
}

func toPlan(p *sdk.Plan, sh Sharing) (*pb.Plan, error) {
	targets, err := encodeMatrix(p.Targets, sh)
	if err != nil {
		return nil, fmt.Errorf("targets: %w", err)
	}
	co, err := toCoefficients(p.Coefs)
	if err != nil {
		return nil, err
	}
	classifier, err := encodeMatrix(p.Classifier, sh)
	if err != nil {
		return nil, fmt.Errorf("fixed classifier: %w", err)
	}
	out := &pb.Plan{
		OneHot:       p.Targets == nil,
		Targets:      targets,
		Weights:      p.Weights,
		Coefficients: co,
		Groups:       toGroups(p.Groups),
		Classifier:   classifier,
	}
	if p.Subset != nil {
		out.HasSubset = true
		out.Subset = toInt32s(p.Subset)
	}
	return out, nil
}

// fromPlan is the host's view of a plan: shared targets are read from the
// host's matrix folder dir (and removed), into reuse when it has room.
func fromPlan(p *pb.Plan, dir string, reuse []float32) (*sdk.Plan, error) {
	out := &sdk.Plan{Weights: p.GetWeights()}
	if len(out.Weights) == 0 {
		out.Weights = nil
	}
	if !p.GetOneHot() {
		// A missing matrix without the one-hot flag stays an error for the
		// validator to report: keep it as a 0×0 matrix, not nil.
		t, err := decodeMatrixInto(p.GetTargets(), dir, true, reuse)
		if err != nil {
			return nil, fmt.Errorf("targets: %w", err)
		}
		if out.Targets = t; t == nil {
			out.Targets = &sdk.Matrix{}
		}
	} else if sh := p.GetTargets().GetShared(); sh != nil && dir != "" && inDir(sh.GetPath(), dir) == nil {
		os.Remove(sh.GetPath()) // a one-hot plan's stray file
	}
	if p.GetHasSubset() {
		out.Subset = fromInt32s(p.GetSubset())
		if out.Subset == nil {
			out.Subset = []int{}
		}
	}
	if c := p.GetCoefficients(); c != nil {
		var err error
		if out.Coefs, err = fromCoefficients(c); err != nil {
			return nil, err
		}
	}
	if g := p.GetGroups(); g != nil {
		var err error
		if out.Groups, err = fromGroups(g); err != nil {
			return nil, fmt.Errorf("class groups: %w", err)
		}
	}
	if v := p.GetClassifier(); v != nil {
		var err error
		if out.Classifier, err = decodeMatrixInto(v, dir, true, nil); err != nil {
			return nil, fmt.Errorf("fixed classifier: %w", err)
		}
	}
	return out, nil
}

// toGroups is the wire form of class groups (nil: none).
func toGroups(g *sdk.Groups) *pb.ClassGroups {
	if g == nil {
		return nil
	}
	out := &pb.ClassGroups{Groups: int32(len(g.Members))}
	for gi, m := range g.Members {
		for _, c := range m {
			out.MemberGroup = append(out.MemberGroup, int32(gi))
			out.MemberClass = append(out.MemberClass, int32(c))
		}
	}
	for _, w := range g.Weights {
		out.WeightClass = append(out.WeightClass, int32(w.Class))
		out.WeightGroup = append(out.WeightGroup, int32(w.Group))
		out.Weight = append(out.Weight, w.W)
	}
	return out
}

// fromGroups reads class groups off the wire; what they say is
// ValidatePlan's to check, what cannot be read (lists of different
// lengths, a group outside 0..groups−1) is refused here.
func fromGroups(g *pb.ClassGroups) (*sdk.Groups, error) {
	n := int(g.GetGroups())
	mg, mc := g.GetMemberGroup(), g.GetMemberClass()
	if len(mg) != len(mc) {
		return nil, fmt.Errorf("%d member groups for %d member classes", len(mg), len(mc))
	}
	// Every group has a member: a count beyond the memberships is refused
	// before anything of its size is made.
	if n < 0 || n > len(mg) {
		return nil, fmt.Errorf("%d groups for %d memberships: a group would be empty", n, len(mg))
	}
	wc, wg, w := g.GetWeightClass(), g.GetWeightGroup(), g.GetWeight()
	if len(wc) != len(wg) || len(wc) != len(w) {
		return nil, fmt.Errorf("weights: %d classes, %d groups, %d values", len(wc), len(wg), len(w))
	}
	out := &sdk.Groups{Members: make([][]int, n), Weights: make([]sdk.GroupWeight, len(w))}
	for i, gi := range mg {
		if gi < 0 || int(gi) >= n {
			return nil, fmt.Errorf("member %d is in group %d, want one in [0,%d)", i, gi, n)
		}
		out.Members[gi] = append(out.Members[gi], int(mc[i]))
	}
	for i := range w {
		out.Weights[i] = sdk.GroupWeight{Class: int(wc[i]), Group: int(wg[i]), W: w[i]}
	}
	return out, nil
}

func toAttributes(as []sdk.Attributes) []*pb.Attributes {
	out := make([]*pb.Attributes, len(as))
	for i, a := range as {
		out[i] = &pb.Attributes{Name: a.Name, Names: a.Names, Values: toMatrix(a.Values)}
	}
	return out
}

func fromAttributes(as []*pb.Attributes) ([]sdk.Attributes, error) {
	out := make([]sdk.Attributes, len(as))
	for i, a := range as {
		v, err := fromMatrix(a.GetValues())
		if err != nil {
			return nil, err
		}
		out[i] = sdk.Attributes{Name: a.GetName(), Names: a.GetNames(), Values: v}
	}
	return out, nil
}

func toNodes(ns []sdk.Node) []*pb.Node {
	if ns == nil {
		return nil
	}
	out := make([]*pb.Node, len(ns))
	for i, n := range ns {
		out[i] = &pb.Node{Id: n.ID, Name: n.Name, Parent: n.Parent}
	}
	return out
}

func fromNodes(ns []*pb.Node) []sdk.Node {
	if len(ns) == 0 {
		return nil
	}
	out := make([]sdk.Node, len(ns))
	for i, n := range ns {
		out[i] = sdk.Node{ID: n.GetId(), Name: n.GetName(), Parent: n.GetParent()}
	}
	return out
}

// toCoefficients is the wire form of c: each field of the one Go form
// (internal/coefs) into the message's field its `proto` tag names, so a new
// coefficient needs no line here (TestCoefficientsMatchCoefs holds the two
// field lists equal).
func toCoefficients(c sdk.Coefs) (*pb.Coefficients, error) {
	out := &pb.Coefficients{}
	m := out.ProtoReflect()
	fields := m.Descriptor().Fields()
	for _, t := range c.Terms() {
		fd := fields.ByName(protoreflect.Name(t.Proto))
		if fd == nil || fd.Kind() != protoreflect.DoubleKind {
			return nil, fmt.Errorf("coefficient %s: no double field of that name in the message Coefficients", t.Proto)
		}
		m.Set(fd, protoreflect.ValueOfFloat64(t.Value))
	}
	return out, nil
}

// fromCoefficients is the Go form of a wire message: each set field into the
// coefficient of its name (a field an older plugin does not send stays 0).
// A message field without a Go coefficient is an error, not dropped
// (TestCoefficientsMatchCoefs keeps that from happening).
func fromCoefficients(c *pb.Coefficients) (sdk.Coefs, error) {
	var out sdk.Coefs
	var err error
	c.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Kind() != protoreflect.DoubleKind {
			err = fmt.Errorf("coefficient %s: not a double", fd.Name())
			return false
		}
		err = out.Set(string(fd.Name()), v.Float())
		return err == nil
	})
	return out, err
}
