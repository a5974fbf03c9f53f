package api

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Values are parameter values checked against their Params: unknown names
// and values that do not parse are errors naming the parameter.
type Values struct {
	specs map[string]Param
	raw   map[string]string
}

// ParseParams checks raw (name → value) against specs and fills in defaults.
func ParseParams(specs []Param, raw map[string]string) (*Values, error) {
	v := &Values{specs: map[string]Param{}, raw: map[string]string{}}
	for _, p := range specs {
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
			return nil, fmt.Errorf("unknown parameter %q (known: %s)", k, strings.Join(paramNames(specs), ", "))
		}
		if err := checkType(p, raw[k]); err != nil {
			return nil, err
		}
		v.raw[k] = raw[k]
	}
	return v, nil
}

func paramNames(specs []Param) []string {
	out := make([]string, len(specs))
	for i, p := range specs {
		out[i] = p.Name
	}
	return out
}

func checkType(p Param, s string) error {
	var err error
	switch p.Type {
	case "float":
		_, err = strconv.ParseFloat(s, 64)
	case "int":
		_, err = strconv.Atoi(s)
	case "bool":
		_, err = strconv.ParseBool(s)
	case "floats":
		_, err = parseFloats(s)
	case "string", "":
	default:
		return fmt.Errorf("parameter %q: unknown type %q", p.Name, p.Type)
	}
	if err != nil {
		return fmt.Errorf("parameter %q: %q is not a valid %s", p.Name, s, p.Type)
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

// String returns the value of a parameter.
func (v *Values) String(name string) string { return v.raw[name] }

// Float returns a float parameter (checked by ParseParams).
func (v *Values) Float(name string) float64 {
	f, _ := strconv.ParseFloat(v.raw[name], 64)
	return f
}

// Int returns an int parameter.
func (v *Values) Int(name string) int {
	i, _ := strconv.Atoi(v.raw[name])
	return i
}

// Bool returns a bool parameter.
func (v *Values) Bool(name string) bool {
	b, _ := strconv.ParseBool(v.raw[name])
	return b
}

// Floats returns a comma-separated list of floats.
func (v *Values) Floats(name string) []float64 {
	f, _ := parseFloats(v.raw[name])
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
