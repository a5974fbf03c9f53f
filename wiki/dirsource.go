package wiki

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/lcl-project/lcl/internal/bounded"
	"github.com/lcl-project/lcl/wordnet"
)

// maxDocumentBytes bounds one document of a dir: source (Wikipedia's
// longest articles are about 1 MB of text).
const maxDocumentBytes = 64 << 20

// DirSource reads the user's documents from Dir: <wnid>.txt, else
// <class id>.txt. A class without a file falls back to its WordNet document
// (reason fallback), so none is dropped.
type DirSource struct {
	Dir     string
	WordNet *wordnet.DB
}

func (DirSource) Name() string { return "dir" }

// Close does nothing: files are read and closed per document.
func (DirSource) Close() error { return nil }

func (s DirSource) Document(_ context.Context, req Request) (*Document, error) {
	var names []string
	if w := req.wnid(); w != "" {
		names = append(names, w+".txt")
	}
	if req.ClassID != "" && req.ClassID != req.wnid() {
		names = append(names, req.ClassID+".txt")
	}
	for _, n := range names {
		path := s.Dir + string(os.PathSeparator) + n
		// A regular file of at most maxDocumentBytes: a link to /dev/zero
		// would be read until memory runs out.
		raw, err := bounded.ReadFile(path, maxDocumentBytes, "document")
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		text := strings.TrimSpace(string(raw))
		if text == "" {
			return nil, fmt.Errorf("%s is empty", path)
		}
		return &Document{WNID: req.wnid(), Title: n, Text: text, Source: "dir",
			Decision: &Decision{WNID: req.wnid(), Reason: ReasonFile, Detail: path}}, nil
	}
	if req.Synset == nil {
		return nil, fmt.Errorf("no file %s in %s", strings.Join(names, " or "), s.Dir)
	}
	return &Document{WNID: req.wnid(), Text: WordNetDocument(s.WordNet, req.Synset), Source: "wordnet",
		Decision: &Decision{WNID: req.wnid(), Reason: ReasonFallback, Detail: fmt.Sprintf("no %s in %s; WordNet document", strings.Join(names, " or "), s.Dir)}}, nil
}
