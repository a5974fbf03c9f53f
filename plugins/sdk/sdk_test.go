package sdk_test

import (
	"math"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/plugins/sdk"
)

func TestParseParams(t *testing.T) {
	specs := []sdk.Param{
		{Name: "epsilon", Type: "float", Default: "0.99"},
		{Name: "n", Type: "int", Default: "3"},
		{Name: "on", Type: "bool", Default: "false"},
		{Name: "shares", Type: "floats", Default: "1,1,1"},
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
		{map[string]string{"epsilom": "1"}, `unknown parameter "epsilom" (known: epsilon, n, on, shares)`},
		{map[string]string{"n": "2.5"}, `parameter "n": "2.5" is not a valid int`},
		{map[string]string{"shares": "1,x"}, `parameter "shares": "1,x" is not a valid floats`},
	}
	for _, tt := range tests {
		if _, err := sdk.ParseParams(specs, tt.raw); err == nil || err.Error() != tt.want {
			t.Errorf("ParseParams(%v) = %v, want %q", tt.raw, err, tt.want)
		}
	}
}

func TestValidatePlan(t *testing.T) {
	eye := &sdk.Matrix{Rows: 2, Cols: 2, Data: []float32{1, 0, 0, 1}}
	ce := sdk.Coefficients{SoftCE: 1}
	tests := []struct {
		name string
		p    *sdk.Plan
		want string // "" = valid
	}{
		{"one-hot", &sdk.Plan{Coef: ce}, ""},
		{"targets", &sdk.Plan{Targets: eye, Weights: []float64{1, 0.5, 0}, Subset: []int{2, 0}, Coef: ce}, ""},
		{"row sum", &sdk.Plan{Targets: &sdk.Matrix{Rows: 2, Cols: 2, Data: []float32{0.5, 0.4, 0, 1}}, Coef: ce}, "row 0 sums to 0.9"},
		{"negative", &sdk.Plan{Targets: &sdk.Matrix{Rows: 2, Cols: 2, Data: []float32{1.5, -0.5, 0, 1}}, Coef: ce}, "target[0][1] = -0.5"},
		{"nan", &sdk.Plan{Targets: &sdk.Matrix{Rows: 2, Cols: 2, Data: []float32{float32(math.NaN()), 1, 0, 1}}, Coef: ce}, "target[0][0] = NaN"},
		{"shape", &sdk.Plan{Targets: &sdk.Matrix{Rows: 1, Cols: 2, Data: []float32{1, 0}}, Coef: ce}, "is 1×2 with 2 values, want 2×2"},
		{"weights", &sdk.Plan{Weights: []float64{1}, Coef: ce}, "1 example weights, want 3"},
		{"subset range", &sdk.Plan{Subset: []int{3}, Coef: ce}, "subset index 3 out of range"},
		{"subset twice", &sdk.Plan{Subset: []int{1, 1}, Coef: ce}, "lists example 1 twice"},
		{"no loss", &sdk.Plan{}, "all loss coefficients are 0"},
		{"kd without T", &sdk.Plan{Coef: sdk.Coefficients{KD: 1}}, "needs a temperature"},
		{"mutual alone", &sdk.Plan{Coef: sdk.Coefficients{SoftCE: 1, Mutual: 1}}, "needs a stage with 2 or more models"},
	}
	for _, tt := range tests {
		err := sdk.ValidatePlan(tt.p, 2, 3, 1)
		if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
		}
	}
}

// A large plan is checked on every CPU, and still reports its first bad row.
func TestValidatePlanLargeFirstBadRow(t *testing.T) {
	const c = 2100 // 4.4 M values: checked in parts
	m := sdk.NewMatrix(c, c)
	for i := 0; i < c; i++ {
		m.Set(i, i, 1)
	}
	if err := sdk.ValidatePlan(&sdk.Plan{Targets: m, Coef: sdk.Coefficients{SoftCE: 1}}, c, 0, 1); err != nil {
		t.Fatal(err)
	}
	m.Set(2000, 3, 0.5)
	m.Set(50, 7, -1)
	err := sdk.ValidatePlan(&sdk.Plan{Targets: m, Coef: sdk.Coefficients{SoftCE: 1}}, c, 0, 1)
	if err == nil || err.Error() != "target[50][7] = -1, want a finite value ≥ 0" {
		t.Fatalf("err = %v", err)
	}
}
