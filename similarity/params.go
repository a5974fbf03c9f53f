package similarity

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
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

// Spec documents a source: what it computes and its parameters.
type Spec struct {
	Summary string
	Params  []Param
}

// graphParam is shared by simrank and lca.
var graphParam = Param{Name: "graph", Type: "string",
	Help: `wordnet, hierarchy or an edge-list FILE ("child parent" lines) (default: hierarchy where the label set has one, else wordnet)`}

// Specs returns the parameter spec of every built-in source by name: the one
// place their defaults are written.
func Specs() map[string]Spec {
	return map[string]Spec{
		"semantic": {"cosine of the class vectors from `lcl embed` (doc2vec of each class's article)", []Param{
			{Name: "model", Type: "string", Help: "embedding model id (default: the label set's most recent vectors)"}}},
		"visual": {"cosine of per-class attribute vectors (AwA2, CUB)", []Param{
			{Name: "attributes", Type: "string", Default: "continuous", Help: "built-in attribute matrix of the label set (continuous, binary) or a FILE of C rows × A columns"},
			{Name: "missing", Type: "string", Default: MissingMean, Help: "missing attribute values: mean (of the attribute over the other classes) or zero"}}},
		"simrank": {"SimRank on a label graph", []Param{
			graphParam,
			{Name: "decay", Type: "float", Default: "0.8", Help: "decay factor C in (0,1) (networkx uses 0.9)"},
			{Name: "iterations", Type: "int", Default: "1000", Help: "maximum iterations"},
			{Name: "tolerance", Type: "float", Default: "1e-06", Help: "stop when no score changes by more than this"},
			{Name: "variant", Type: "string", Default: VariantJehWidom, Help: "jeh-widom, star (SimRank*, Yu et al. 2013) or undirected (undirected graph with self-loops)"}}},
		"lca": {"similarity of the lowest common ancestor in a label graph", []Param{
			graphParam,
			{Name: "form", Type: "string", Default: FormWuPalmer, Help: "wup (Wu-Palmer) or height (1 − height(LCA)/max height, Bertinetto et al. 2020)"}}},
		"matrix": {"a precomputed C×C matrix (CSV, text or .npy) in class order", []Param{
			{Name: "file", Type: "string", Help: "CSV, text or .npy file with the C×C matrix in class order"}}},
	}
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
	sp, ok := Specs()[source]
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
	return "", fmt.Errorf("parameter %s: %q is not one of %s", key, v, strings.Join(allowed, ", "))
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
