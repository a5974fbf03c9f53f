package experiment

// The pflag.Value adapters that bind lcl train's flags (trainFlags) to the
// fields of a TrainSpec: value (a plain field), optional (a pointer field,
// nil until given) and the list types.

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/lcl-project/lcl/trainer"
	"github.com/lcl-project/lcl/trainer/data"
)

// isGiven reports whether an optional value was given.
func isGiven(v pflag.Value) bool {
	g, ok := v.(interface{ Given() bool })
	return ok && g.Given()
}

// value is a flag bound to a field of type T.
type value[T any] struct {
	p      *T
	parse  func(string) (T, error)
	format func(T) string
	typ    string
}

func (v value[T]) String() string { return v.format(*v.p) }
func (v value[T]) Type() string   { return v.typ }
func (v value[T]) Set(s string) error {
	x, err := v.parse(s)
	if err != nil {
		return err
	}
	*v.p = x
	return nil
}

// optional is a flag bound to a field of type *T: nil until given.
type optional[T any] struct {
	p      **T
	parse  func(string) (T, error)
	format func(T) string
	typ    string
	def    string // what the help shows while not given
}

func (v optional[T]) Given() bool  { return *v.p != nil }
func (v optional[T]) Type() string { return v.typ }
func (v optional[T]) String() string {
	if *v.p == nil {
		return v.def
	}
	return v.format(**v.p)
}
func (v optional[T]) Set(s string) error {
	x, err := v.parse(s)
	if err != nil {
		return err
	}
	*v.p = &x
	return nil
}

func parseString(s string) (string, error) { return s, nil }

// parseRandAugment checks --randaugment's N,M and keeps it as written
// without spaces.
func parseRandAugment(s string) (string, error) {
	n, m, err := data.ParseRandAugment(s)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d,%d", n, m), nil
}
func parseFloat(s string) (float64, error) { return numErr(strconv.ParseFloat(s, 64)) }
func parseInt(s string) (int, error)       { return numErr(strconv.Atoi(s)) }
func parseInt64(s string) (int64, error)   { return numErr(strconv.ParseInt(s, 10, 64)) }
func parseBool(s string) (bool, error)     { return numErr(strconv.ParseBool(s)) }

// numErr drops strconv's repetition of the input from its errors.
func numErr[T any](x T, err error) (T, error) {
	if ne, ok := err.(*strconv.NumError); ok {
		err = ne.Err
	}
	return x, err
}

func str(p *string) value[string] {
	return value[string]{p, parseString, func(s string) string { return s }, "string"}
}
func float(p *float64) value[float64] { return value[float64]{p, parseFloat, formatFloat, "float"} }
func intv(p *int) value[int]          { return value[int]{p, parseInt, strconv.Itoa, "int"} }
func int64v(p *int64) value[int64] {
	return value[int64]{p, parseInt64, func(n int64) string { return strconv.FormatInt(n, 10) }, "int"}
}
func boolv(p *bool) value[bool] { return value[bool]{p, parseBool, strconv.FormatBool, "bool"} }
func duration(p *time.Duration) value[time.Duration] {
	format := func(d time.Duration) string {
		if d == 0 {
			return "0" // the help shows no default then
		}
		return d.String()
	}
	return value[time.Duration]{p, time.ParseDuration, format, "duration"}
}
func optString(p **string, def string) optional[string] {
	return optional[string]{p, parseString, func(s string) string { return s }, "string", def}
}
func optFloat(p **float64, def string) optional[float64] {
	return optional[float64]{p, parseFloat, formatFloat, "float", def}
}
func optInt(p **int) optional[int] { return optional[int]{p, parseInt, strconv.Itoa, "int", "0"} }
func optBool(p **bool) optional[bool] {
	return optional[bool]{p, parseBool, strconv.FormatBool, "bool", "false"}
}

// setting is a flag bound to a row of the trainer's settings table:
// the row parses, spells and checks the value; Given is the row's bit.
type setting struct {
	s *trainer.Settings
	r trainer.Setting
}

// bindSetting is row r's flag on s (a repeatable row adds each value).
func bindSetting(s *trainer.Settings, r trainer.Setting) pflag.Value {
	if r.Repeat {
		return repeatedSetting{setting{s, r}}
	}
	return setting{s, r}
}

func (v setting) Given() bool        { return v.s.Given(v.r.Name) }
func (v setting) Type() string       { return v.r.Type }
func (v setting) Set(x string) error { return v.s.Set(v.r.Name, x) }
func (v setting) String() string {
	if !v.Given() {
		return v.r.Def
	}
	return v.s.Value(v.r.Name)
}

// repeatedSetting is a repeatable setting (--optim-param NAME=VALUE), a
// pflag.SliceValue.
type repeatedSetting struct{ setting }

func (v repeatedSetting) Append(x string) error { return v.Set(x) }
func (v repeatedSetting) Replace(xs []string) error {
	v.s.Unset(v.r.Name)
	for _, x := range xs {
		if err := v.Set(x); err != nil {
			return err
		}
	}
	return nil
}

func (v repeatedSetting) GetSlice() []string {
	if !v.Given() {
		return nil
	}
	return v.s.Values(v.r.Name)
}

// stringList is a comma-separated, repeatable list (nil until given), as
// pflag's StringSlice.
type stringList struct{ p *[]string }

func (l stringList) Given() bool  { return *l.p != nil }
func (l stringList) Type() string { return "strings" }
func (l stringList) String() string {
	if *l.p == nil {
		return "" // not given: the help shows no default
	}
	return "[" + strings.Join(*l.p, ",") + "]"
}
func (l stringList) GetSlice() []string { return slices.Clone(*l.p) }
func (l stringList) Replace(vs []string) error {
	*l.p = []string{}
	for _, v := range vs {
		if err := l.Set(v); err != nil {
			return err
		}
	}
	return nil
}
func (l stringList) Append(v string) error { return l.Set(v) }
func (l stringList) Set(s string) error {
	if *l.p == nil {
		*l.p = []string{}
	}
	for v := range strings.SplitSeq(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			*l.p = append(*l.p, v)
		}
	}
	return nil
}

// paramsValue is --param NAME=VALUE, repeatable, into a map.
type paramsValue struct{ p *map[string]string }

func (v paramsValue) Type() string { return "stringArray" }
func (v paramsValue) String() string {
	if len(*v.p) == 0 {
		return "" // the help shows no default
	}
	return "[" + strings.Join(v.GetSlice(), ",") + "]"
}
func (v paramsValue) GetSlice() []string {
	var out []string
	for _, k := range sortedKeys(*v.p) {
		out = append(out, k+"="+(*v.p)[k])
	}
	return out
}
func (v paramsValue) Append(s string) error { return v.Set(s) }
func (v paramsValue) Replace(vs []string) error {
	*v.p = nil
	for _, s := range vs {
		if err := v.Set(s); err != nil {
			return err
		}
	}
	return nil
}
func (v paramsValue) Set(s string) error {
	k, val, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want NAME=VALUE")
	}
	if *v.p == nil {
		*v.p = map[string]string{}
	}
	(*v.p)[k] = val
	return nil
}
