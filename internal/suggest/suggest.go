// Package suggest finds the names closest to a misspelt one, for the
// "did you mean" of an error message.
package suggest

import (
	"slices"
	"strings"
)

// Closest returns the names within a small edit distance of name (a third
// of its length, at least 1, at most 3; case ignored), nearest first, or
// those that start with it. It returns nil when none is close.
func Closest(name string, names []string) []string {
	name = strings.ToLower(name)
	limit := min(max(len(name)/3, 1), 3)
	type cand struct {
		name string
		d    int
	}
	var out []cand
	for _, n := range names {
		l := strings.ToLower(n)
		if d := Distance(name, l); d <= limit || (len(name) >= 3 && strings.HasPrefix(l, name)) {
			out = append(out, cand{n, d})
		}
	}
	slices.SortStableFunc(out, func(a, b cand) int { return a.d - b.d })
	res := make([]string, 0, len(out))
	for _, c := range out {
		res = append(res, c.name)
	}
	if len(res) == 0 {
		return nil
	}
	return res
}

// DidYouMean is "; did you mean X?" (or "X or Y", the nearest three) for
// the names close to name, "" when none is.
func DidYouMean(name string, names []string) string { return didYouMean(name, names, "") }

// DidYouMeanFlag is DidYouMean for flag names (given without their "--"),
// shown as flags: "; did you mean --epochs?".
func DidYouMeanFlag(name string, names []string) string { return didYouMean(name, names, "--") }

func didYouMean(name string, names []string, prefix string) string {
	c := Closest(name, names)
	if len(c) == 0 {
		return ""
	}
	c = c[:min(len(c), 3)]
	for i := range c {
		c[i] = prefix + c[i]
	}
	return "; did you mean " + strings.Join(c, " or ") + "?"
}

// Distance is the edit distance of a and b counting insertions, deletions
// and substitutions of runes and the swap of two adjacent runes as one edit
// each (optimal string alignment: "modle" is one edit from "model", where
// plain Levenshtein counts two).
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1) // row i-2
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
