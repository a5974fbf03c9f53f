package similarity

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/lcl-project/lcl/internal/suggest"
)

// Param documents one parameter of a source. Its name is also the flag of
// `lcl similarity`, and plugins/source serves it to `lcl plugins list`.
type Param struct {
	Name string
	Type string // string, float or int
	// Default is the value used when the parameter is not given; "" when
	// there is none or it depends on the label set (Help says which).
	Default string
	Help    string
}

// Spec documents a source: what it computes, its parameters, and whether
// it reads the label set's attribute matrices (a plugin host then sends
// them).
type Spec struct {
	Summary         string
	Params          []Param
	NeedsAttributes bool
}

// params is a typed view of a source's string parameters, checked against
// its Spec, that records the effective value of every parameter it reads.
type params struct {
	in        map[string]string
	effective map[string]string
	spec      map[string]Param
}

// newParams checks in against the spec of the built-in source name.
func newParams(in map[string]string, source string) (*params, error) {
	b, ok := Builtins()[source]
	sp := b.Spec
	if !ok {
		return nil, fmt.Errorf("no parameter spec for source %q", source) // a built-in without a spec: a bug
	}
	p := &params{in: in, effective: map[string]string{}, spec: map[string]Param{}}
	var known []string
	for _, q := range sp.Params {
		p.spec[q.Name] = q
		known = append(known, q.Name)
	}
	var unknown []string
	for k := range in {
		if _, ok := p.spec[k]; !ok {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		sort.Strings(known)
		return nil, fmt.Errorf("unknown parameter(s) %s (this source takes: %s)", strings.Join(unknown, ", "), strings.Join(known, ", "))
	}
	return p, nil
}

// str is the parameter's value, else its spec's default.
func (p *params) str(key string) string { return p.strOr(key, p.spec[key].Default) }

// strOr is the parameter's value, else def (a default that depends on the input).
func (p *params) strOr(key, def string) string {
	v := strings.TrimSpace(p.in[key])
	if v == "" {
		v = def
	}
	if v != "" {
		p.effective[key] = v
	}
	return v
}

func (p *params) choice(key string, allowed ...string) (string, error) {
	v := p.str(key)
	for _, a := range allowed {
		if v == a {
			return v, nil
		}
	}
	return "", fmt.Errorf("parameter %s: %q is not one of %s%s", key, v, strings.Join(allowed, ", "), suggest.DidYouMean(v, allowed))
}

func (p *params) float(key string) (float64, error) {
	v := p.str(key)
	x, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
		return 0, fmt.Errorf("parameter %s: %q is not a finite number", key, v)
	}
	p.effective[key] = strconv.FormatFloat(x, 'g', -1, 64)
	return x, nil
}

func (p *params) int(key string) (int, error) {
	v := p.str(key)
	x, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("parameter %s: %q is not an integer", key, v)
	}
	p.effective[key] = strconv.Itoa(x)
	return x, nil
}
