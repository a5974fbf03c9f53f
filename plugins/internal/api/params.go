package api

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/lcl-project/lcl/internal/suggest"
)

// Values are parameter values checked against their Params: unknown names
// and values that do not parse are errors naming the parameter.
//
// The getters (Float, Int, ...) return the value of a declared parameter. A
// name that was not declared (a typo in the plugin's code) reads as the zero
// value and is kept for Err, which reports the first one: read the values,
// then check Err once, as with bufio.Scanner.
type Values struct {
	specs map[string]Param
	raw   map[string]string
	err   error
}

// ParseParams checks specs (names unique and non-empty, types known, every
// default valid for its type), then raw (name → value) against them, and
// fills in defaults. Every error names the parameter.
func ParseParams(specs []Param, raw map[string]string) (*Values, error) {
	v := &Values{specs: map[string]Param{}, raw: map[string]string{}}
	for _, p := range specs {
		if p.Name == "" {
			return nil, fmt.Errorf("a parameter has no name")
		}
		if _, dup := v.specs[p.Name]; dup {
			return nil, fmt.Errorf("parameter %q is declared twice", p.Name)
		}
		if err := checkType(p, p.Default); err != nil {
			return nil, fmt.Errorf("default of %w", err)
		}
		v.specs[p.Name] = p
		v.raw[p.Name] = p.Default
	}
	names := make([]string, 0, len(raw))
	for k := range raw {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		p, ok := v.specs[k]
		if !ok {
			return nil, &UnknownParamError{Name: k, Value: raw[k], Known: paramNames(specs)}
		}
		if err := checkType(p, raw[k]); err != nil {
			return nil, err
		}
		v.raw[k] = raw[k]
	}
	return v, nil
}

// UnknownParamError is a parameter given that the plugin does not
// declare: its name and value, and the names it declares.
type UnknownParamError struct {
	Name, Value string
	Known       []string
}

func (e *UnknownParamError) Error() string {
	if len(e.Known) == 0 {
		return fmt.Sprintf("unknown parameter %q (it takes none)", e.Name)
	}
	return fmt.Sprintf("unknown parameter %q (known: %s)%s", e.Name, strings.Join(e.Known, ", "), suggest.DidYouMean(e.Name, e.Known))
}

func paramNames(specs []Param) []string {
	out := make([]string, len(specs))
	for i, p := range specs {
		out[i] = p.Name
	}
	return out
}

// checkType checks s as a value of p's type; a float (or each of floats)
// must be finite: no strategy's range holds NaN or ±Inf, and a range
// check written v < 0 lets NaN through.
func checkType(p Param, s string) error {
	var err error
	var xs []float64
	switch p.Type {
	case ParamFloat:
		var x float64
		x, err = strconv.ParseFloat(s, 64)
		xs = []float64{x}
	case ParamInt:
		_, err = strconv.Atoi(s)
	case ParamBool:
		_, err = strconv.ParseBool(s)
	case ParamFloats:
		xs, err = parseFloats(s)
	case ParamString, "":
	default:
		return fmt.Errorf("parameter %q: unknown type %q", p.Name, p.Type)
	}
	if err != nil {
		return fmt.Errorf("parameter %q: %q is not a valid %s", p.Name, s, p.Type)
	}
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("parameter %q: %q is not a finite number", p.Name, s)
		}
	}
	return nil
}

func parseFloats(s string) ([]float64, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	parts := strings.Split(s, ",")
	out := make([]float64, len(parts))
	for i, p := range parts {
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil {
			return nil, err
		}
		out[i] = f
	}
	return out, nil
}

// get returns the raw value of a declared parameter; an undeclared name
// returns "" and is kept for Err.
func (v *Values) get(name string) string {
	s, ok := v.raw[name]
	if !ok && v.err == nil {
		v.err = fmt.Errorf("parameter %q is read but not declared (declared: %s)", name, strings.Join(v.names(), ", "))
	}
	return s
}

func (v *Values) names() []string {
	out := make([]string, 0, len(v.specs))
	for k := range v.specs {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Err reports the first name a getter was asked for that no Param declares;
// nil when every name read was declared.
func (v *Values) Err() error { return v.err }

// Has reports whether name is a declared parameter.
func (v *Values) Has(name string) bool {
	_, ok := v.specs[name]
	return ok
}

// String returns the value of a parameter.
func (v *Values) String(name string) string { return v.get(name) }

// Float returns a float parameter (checked by ParseParams).
func (v *Values) Float(name string) float64 {
	f, _ := strconv.ParseFloat(v.get(name), 64)
	return f
}

// Int returns an int parameter.
func (v *Values) Int(name string) int {
	i, _ := strconv.Atoi(v.get(name))
	return i
}

// Bool returns a bool parameter.
func (v *Values) Bool(name string) bool {
	b, _ := strconv.ParseBool(v.get(name))
	return b
}

// Floats returns a comma-separated list of floats.
func (v *Values) Floats(name string) []float64 {
	f, _ := parseFloats(v.get(name))
	return f
}

// Map returns every parameter's value, defaults included.
func (v *Values) Map() map[string]string {
	out := make(map[string]string, len(v.raw))
	for k, s := range v.raw {
		out[k] = s
	}
	return out
}
