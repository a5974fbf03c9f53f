// Command lcl-similarity-lexical is an example third-party similarity
// source: s(a,b) = 1 − editdistance(name_a, name_b)/max(len), s(a,a) = 1.
//
//	go build -o ~/.lcl/plugins/lcl-similarity-lexical ./examples/lcl-similarity-lexical
package main

import (
	"context"
	"strings"

	"github.com/lcl-project/lcl/plugins/sdk"
)

func main() { sdk.Serve(sdk.ServeConfig{SimilaritySource: lexical{}}) }

type lexical struct{}

func (lexical) Describe(context.Context) (sdk.SourceInfo, error) {
	return sdk.SourceInfo{Name: "lexical", Version: "0.1.0", Summary: "1 − normalised edit distance of class names"}, nil
}

func (lexical) Compute(_ context.Context, req sdk.SimilarityRequest) (*sdk.Matrix, error) {
	if _, err := sdk.ParseParams(nil, req.Params); err != nil {
		return nil, err
	}
	c := len(req.Classes)
	m := sdk.NewMatrix(c, c)
	for i, a := range req.Classes {
		for j, b := range req.Classes {
			x, y := []rune(strings.ToLower(a.Name)), []rune(strings.ToLower(b.Name))
			if n := max(len(x), len(y)); n > 0 {
				m.Set(i, j, float32(1-float64(edit(x, y))/float64(n)))
			} else {
				m.Set(i, j, 1)
			}
		}
	}
	return m, nil
}

// edit is the Levenshtein distance.
func edit(a, b []rune) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
