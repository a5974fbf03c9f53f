package wiki

import (
	"context"
	"fmt"

	"github.com/lcl-project/lcl/wordnet"
)

// WordNetSource is the offline default Source: every class's document is
// its WordNetDocument.
type WordNetSource struct{ WordNet *wordnet.DB }

func (WordNetSource) Name() string { return "wordnet" }

// Close does nothing: the WordNet database belongs to the caller.
func (WordNetSource) Close() error { return nil }

func (w WordNetSource) Document(_ context.Context, req Request) (*Document, error) {
	if req.Synset == nil {
		return nil, fmt.Errorf("class %q has no WordNet synset: the wordnet source cannot describe it (use --source dir:PATH)", req.ClassID)
	}
	return &Document{WNID: req.Synset.ID, Text: WordNetDocument(w.WordNet, req.Synset), Source: "wordnet",
		Decision: &Decision{WNID: req.Synset.ID, Reason: ReasonWordNet}}, nil
}
