package cli

import (
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/lcl-project/lcl/experiment/trainrun"
	"github.com/lcl-project/lcl/plugins/strategy"
)

// strategyOptions are lcl plan's flags that choose a strategy and its
// similarity matrix (lcl train's are fields of its TrainSpec).
type strategyOptions struct {
	Strategy string
	Params   []string // --param NAME=VALUE, repeatable
	Epsilon  float64  // --epsilon, shorthand for --param epsilon=
	Source   string   // similarity: a store matrix kind, or a similarity plugin
	Matrix   string   // similarity: an .npy file
	Key      string   // similarity: a store matrix key
	Timeout  time.Duration
}

func (o *strategyOptions) addFlags(fs *pflag.FlagSet, defaultStrategy string) {
	fs.StringVar(&o.Strategy, "strategy", defaultStrategy, "training strategy: a built-in ("+strings.Join(strategy.Names(), ", ")+") or a plugin; see lcl plugins list")
	o.addParamFlags(fs)
}

// addParamFlags adds every strategy flag but --strategy.
func (o *strategyOptions) addParamFlags(fs *pflag.FlagSet) {
	fs.StringArrayVar(&o.Params, "param", nil, "strategy parameter NAME=VALUE (repeatable); see lcl plugins list")
	fs.Float64Var(&o.Epsilon, "epsilon", 0, "lcl's decay ε (shorthand for --param epsilon=ε; paper: 0.9, 0.99, 0.999)")
	fs.StringVar(&o.Source, "source", "semantic", "similarity matrix: the latest matrix of this kind in the store, else a similarity plugin of this name")
	fs.StringVar(&o.Matrix, "matrix", "", "C×C similarity (soft: target) matrix file, .npy, CSV or text in class order; not --source")
	fs.StringVar(&o.Key, "similarity-key", "", "similarity matrix by its store key (lcl store ls), instead of --source")
	fs.DurationVar(&o.Timeout, "plugin-timeout", 0, "longest wait for one plugin call (default $LCL_PLUGIN_TIMEOUT, else 1m)")
}

// params merges --param and --epsilon.
func (o *strategyOptions) params(fs *pflag.FlagSet) (map[string]string, error) {
	out := map[string]string{}
	for _, p := range o.Params {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, usagef("--param %q: want NAME=VALUE", p)
		}
		out[k] = v
	}
	if fs.Changed("epsilon") {
		if v, ok := out["epsilon"]; ok && v != strconv.FormatFloat(o.Epsilon, 'g', -1, 64) {
			return nil, usagef("--epsilon %g and --param epsilon=%s disagree", o.Epsilon, v)
		}
		out["epsilon"] = strconv.FormatFloat(o.Epsilon, 'g', -1, 64)
	}
	return out, nil
}

// selection is the strategy and similarity the flags choose, for
// trainrun.OpenStrategy.
func (o *strategyOptions) selection(fs *pflag.FlagSet) (trainrun.Selection, error) {
	params, err := o.params(fs)
	if err != nil {
		return trainrun.Selection{}, err
	}
	if o.Matrix != "" && o.Key != "" {
		return trainrun.Selection{}, usagef("--matrix %s and --similarity-key %s both name the similarity matrix: give one of them", o.Matrix, o.Key)
	}
	return trainrun.Selection{Strategy: o.Strategy, Params: params, EpsilonFlag: fs.Changed("epsilon"), Source: o.Source, File: o.Matrix, Key: o.Key}, nil
}
