package sdk_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/plugins/sdk"
)

func TestParseParams(t *testing.T) {
	specs := []sdk.Param{
		{Name: "epsilon", Type: sdk.ParamFloat, Default: "0.99"},
		{Name: "n", Type: sdk.ParamInt, Default: "3"},
		{Name: "on", Type: sdk.ParamBool, Default: "false"},
		{Name: "shares", Type: sdk.ParamFloats, Default: "1,1,1"},
	}
	v, err := sdk.ParseParams(specs, map[string]string{"epsilon": "0.9", "on": "true"})
	if err != nil {
		t.Fatal(err)
	}
	if v.Float("epsilon") != 0.9 || v.Int("n") != 3 || !v.Bool("on") || len(v.Floats("shares")) != 3 {
		t.Fatalf("values: %v", v.Map())
	}
	tests := []struct {
		raw  map[string]string
		want string
	}{
		{map[string]string{"epsilom": "1"}, `unknown parameter "epsilom" (known: epsilon, n, on, shares); did you mean epsilon?`},
		{map[string]string{"alpha": "1"}, `unknown parameter "alpha" (known: epsilon, n, on, shares)`},
		{map[string]string{"n": "2.5"}, `parameter "n": "2.5" is not a valid int`},
		{map[string]string{"shares": "1,x"}, `parameter "shares": "1,x" is not a valid floats`},
		// A number parameter is finite: no strategy's range holds NaN or ±Inf.
		{map[string]string{"epsilon": "NaN"}, `parameter "epsilon": "NaN" is not a finite number`},
		{map[string]string{"epsilon": "inf"}, `parameter "epsilon": "inf" is not a finite number`},
		{map[string]string{"epsilon": "-Inf"}, `parameter "epsilon": "-Inf" is not a finite number`},
		{map[string]string{"epsilon": "1e999"}, `parameter "epsilon": "1e999" is not a valid float`},
		{map[string]string{"shares": "1,nan,1"}, `parameter "shares": "1,nan,1" is not a finite number`},
	}
	for _, tt := range tests {
		if _, err := sdk.ParseParams(specs, tt.raw); err == nil || err.Error() != tt.want {
			t.Errorf("ParseParams(%v) = %v, want %q", tt.raw, err, tt.want)
		}
	}
	// A strategy that declares none says so; the error names the parameter.
	_, err = sdk.ParseParams(nil, map[string]string{"epsilon": "0.9"})
	var ue *sdk.UnknownParamError
	if err == nil || err.Error() != `unknown parameter "epsilon" (it takes none)` || !errors.As(err, &ue) || ue.Name != "epsilon" || ue.Value != "0.9" {
		t.Errorf("no parameters declared: %v", err)
	}
}

// The declarations are checked before any value: a default that does not
// parse as its type, an unknown type, a duplicate or empty name.
func TestParseParamsDeclarations(t *testing.T) {
	tests := []struct {
		name  string
		specs []sdk.Param
		want  string // "" = valid
	}{
		{"all types", []sdk.Param{{Name: "a", Type: sdk.ParamFloat, Default: "-1e-3"}, {Name: "b", Type: sdk.ParamInt, Default: "7"},
			{Name: "c", Type: sdk.ParamBool, Default: "true"}, {Name: "d", Type: sdk.ParamString, Default: ""},
			{Name: "e", Type: sdk.ParamFloats, Default: ""}, {Name: "f", Default: "x"}}, ""},
		{"float default", []sdk.Param{{Name: "alpha", Type: sdk.ParamFloat, Default: "0,9"}}, `default of parameter "alpha": "0,9" is not a valid float`},
		{"int default", []sdk.Param{{Name: "k", Type: sdk.ParamInt, Default: "2.0"}}, `default of parameter "k": "2.0" is not a valid int`},
		{"bool default", []sdk.Param{{Name: "on", Type: sdk.ParamBool, Default: "yes"}}, `default of parameter "on": "yes" is not a valid bool`},
		{"floats default", []sdk.Param{{Name: "s", Type: sdk.ParamFloats, Default: "1,,2"}}, `default of parameter "s": "1,,2" is not a valid floats`},
		{"empty float default", []sdk.Param{{Name: "T", Type: sdk.ParamFloat}}, `default of parameter "T": "" is not a valid float`},
		{"unknown type", []sdk.Param{{Name: "x", Type: "double", Default: "1"}}, `default of parameter "x": unknown type "double"`},
		{"twice", []sdk.Param{{Name: "x", Type: sdk.ParamInt, Default: "1"}, {Name: "x", Type: sdk.ParamInt, Default: "2"}}, `parameter "x" is declared twice`},
		{"no name", []sdk.Param{{Type: sdk.ParamInt, Default: "1"}}, "a parameter has no name"},
	}
	for _, tt := range tests {
		_, err := sdk.ParseParams(tt.specs, nil)
		if (tt.want == "") != (err == nil) || (err != nil && err.Error() != tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
		}
	}
}

// A getter asked for a name no Param declares reads as zero and Err names
// the first such name; declared names leave Err nil.
func TestValuesErr(t *testing.T) {
	specs := []sdk.Param{{Name: "alpha", Type: sdk.ParamFloat, Default: "0.5"}, {Name: "k", Type: sdk.ParamInt, Default: "2"}}
	tests := []struct {
		name string
		read func(v *sdk.Values) any
		want any
		err  string
	}{
		{"float", func(v *sdk.Values) any { return v.Float("alpha") }, 0.5, ""},
		{"int", func(v *sdk.Values) any { return v.Int("k") }, 2, ""},
		{"float typo", func(v *sdk.Values) any { return v.Float("alpah") }, 0.0, `parameter "alpah" is read but not declared (declared: alpha, k)`},
		{"int typo", func(v *sdk.Values) any { return v.Int("K") }, 0, `parameter "K" is read but not declared (declared: alpha, k)`},
		{"bool", func(v *sdk.Values) any { return v.Bool("on") }, false, `parameter "on" is read but not declared (declared: alpha, k)`},
		{"string", func(v *sdk.Values) any { return v.String("model") }, "", `parameter "model" is read but not declared (declared: alpha, k)`},
		{"floats", func(v *sdk.Values) any { return len(v.Floats("shares")) }, 0, `parameter "shares" is read but not declared (declared: alpha, k)`},
		{"first kept", func(v *sdk.Values) any { v.Int("first"); v.Float("alpha"); return v.Int("second") }, 0,
			`parameter "first" is read but not declared (declared: alpha, k)`},
	}
	for _, tt := range tests {
		v, err := sdk.ParseParams(specs, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := tt.read(v); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
		if err := v.Err(); (tt.err == "") != (err == nil) || (err != nil && err.Error() != tt.err) {
			t.Errorf("%s: Err() = %v, want %q", tt.name, err, tt.err)
		}
	}
	v, _ := sdk.ParseParams(specs, nil)
	if !v.Has("alpha") || v.Has("alpah") {
		t.Errorf("Has: alpha %v, alpah %v", v.Has("alpha"), v.Has("alpah"))
	}
}

// A strategy that embeds Base and writes Describe, Begin and Plan is a
// Strategy; Observe accepts metrics and Features answers ErrNoFeatures.
func TestBase(t *testing.T) {
	var s sdk.Strategy = &baseOnly{}
	if err := s.Observe(context.Background(), sdk.Metrics{Values: map[string]float64{"loss": 1}}); err != nil {
		t.Errorf("Observe = %v, want nil", err)
	}
	chunks := sdk.ChunkSlice{{Indices: []int{0}, Dim: 1, Data: []float32{1}}}
	if err := s.Features(context.Background(), &chunks); !errors.Is(err, sdk.ErrNoFeatures) {
		t.Errorf("Features = %v, want ErrNoFeatures", err)
	}
}

type baseOnly struct{ sdk.Base }

func (baseOnly) Describe(context.Context) (sdk.StrategyInfo, error)  { return sdk.StrategyInfo{}, nil }
func (baseOnly) Begin(context.Context, sdk.Run) ([]sdk.Stage, error) { return nil, nil }
func (baseOnly) Plan(context.Context, sdk.PlanAt) (*sdk.Plan, error) { return nil, nil }

func TestValidatePlan(t *testing.T) {
	eye := &sdk.Matrix{Rows: 2, Cols: 2, Data: []float32{1, 0, 0, 1}}
	ce := sdk.Coefs{SoftCE: 1}
	tests := []struct {
		name string
		p    *sdk.Plan
		want string // "" = valid
	}{
		{"one-hot", &sdk.Plan{Coefs: ce}, ""},
		{"targets", &sdk.Plan{Targets: eye, Weights: []float64{1, 0.5, 0}, Subset: []int{2, 0}, Coefs: ce}, ""},
		{"row sum", &sdk.Plan{Targets: &sdk.Matrix{Rows: 2, Cols: 2, Data: []float32{0.5, 0.4, 0, 1}}, Coefs: ce}, "row 0 sums to 0.9"},
		{"negative", &sdk.Plan{Targets: &sdk.Matrix{Rows: 2, Cols: 2, Data: []float32{1.5, -0.5, 0, 1}}, Coefs: ce}, "target[0][1] = -0.5"},
		{"nan", &sdk.Plan{Targets: &sdk.Matrix{Rows: 2, Cols: 2, Data: []float32{float32(math.NaN()), 1, 0, 1}}, Coefs: ce}, "target[0][0] = NaN"},
		{"shape", &sdk.Plan{Targets: &sdk.Matrix{Rows: 1, Cols: 2, Data: []float32{1, 0}}, Coefs: ce}, "is 1×2 with 2 values, want 2×2"},
		{"weights", &sdk.Plan{Weights: []float64{1}, Coefs: ce}, "1 example weights, want 3"},
		{"subset range", &sdk.Plan{Subset: []int{3}, Coefs: ce}, "subset index 3 out of range"},
		{"subset twice", &sdk.Plan{Subset: []int{1, 1}, Coefs: ce}, "lists example 1 twice"},
		{"no loss", &sdk.Plan{}, "all loss coefficients are 0"},
		{"kd without T", &sdk.Plan{Coefs: sdk.Coefs{KD: 1}}, "needs a temperature"},
		{"mutual alone", &sdk.Plan{Coefs: sdk.Coefs{SoftCE: 1, Mutual: 1}}, "needs a stage with 2 or more models"},
		{"groups", &sdk.Plan{Coefs: sdk.Coefs{Group: 1}, Groups: groups([][]int{{0}, {0, 1}}, sdk.GroupWeight{Class: 0, Group: 1, W: -0.5})}, ""},
		{"group without groups", &sdk.Plan{Coefs: sdk.Coefs{Group: 1}}, "needs class groups"},
		{"negative group coefficient", &sdk.Plan{Coefs: sdk.Coefs{SoftCE: 1, Group: -1}, Groups: groups([][]int{{0}})}, "coefficient group = -1"},
		{"no groups", &sdk.Plan{Coefs: sdk.Coefs{Group: 1}, Groups: groups(nil)}, "no groups"},
		{"empty group", &sdk.Plan{Coefs: sdk.Coefs{Group: 1}, Groups: groups([][]int{{0}, {}})}, "group 1 is empty"},
		{"group class range", &sdk.Plan{Coefs: sdk.Coefs{Group: 1}, Groups: groups([][]int{{2}})}, "group 0 lists class 2"},
		{"group class twice", &sdk.Plan{Coefs: sdk.Coefs{Group: 1}, Groups: groups([][]int{{1, 1}})}, "lists class 1 twice"},
		{"weight range", &sdk.Plan{Coefs: sdk.Coefs{Group: 1}, Groups: groups([][]int{{0}}, sdk.GroupWeight{Class: 0, Group: 1, W: 1})}, "weight 0 is at class 0, group 1"},
		{"weight NaN", &sdk.Plan{Coefs: sdk.Coefs{Group: 1}, Groups: groups([][]int{{0}}, sdk.GroupWeight{W: math.NaN()})}, "want a finite value"},
		{"weight twice", &sdk.Plan{Coefs: sdk.Coefs{Group: 1}, Groups: groups([][]int{{0}}, sdk.GroupWeight{W: 1}, sdk.GroupWeight{W: 2})}, "given twice"},
		{"too many groups", &sdk.Plan{Coefs: sdk.Coefs{Group: 1}, Groups: groups(make([][]int, sdk.MaxGroupCells/2+1))}, "more than the"},
	}
	for _, tt := range tests {
		err := sdk.ValidatePlan(tt.p, 2, 3, 1)
		if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
		}
	}
}

// groups are class groups with these members and weights.
func groups(members [][]int, w ...sdk.GroupWeight) *sdk.Groups {
	return &sdk.Groups{Members: members, Weights: w}
}

// A large plan is checked on every CPU, and still reports its first bad row.
func TestValidatePlanLargeFirstBadRow(t *testing.T) {
	const c = 2100 // 4.4 M values: checked in parts
	m := sdk.NewMatrix(c, c)
	for i := 0; i < c; i++ {
		m.Set(i, i, 1)
	}
	if err := sdk.ValidatePlan(&sdk.Plan{Targets: m, Coefs: sdk.Coefs{SoftCE: 1}}, c, 0, 1); err != nil {
		t.Fatal(err)
	}
	m.Set(2000, 3, 0.5)
	m.Set(50, 7, -1)
	err := sdk.ValidatePlan(&sdk.Plan{Targets: m, Coefs: sdk.Coefs{SoftCE: 1}}, c, 0, 1)
	if err == nil || err.Error() != "target[50][7] = -1, want a finite value ≥ 0" {
		t.Fatalf("err = %v", err)
	}
}
