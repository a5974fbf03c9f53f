package wordnet

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
)

// maxLine bounds one data.noun line read at an offset (WordNet 3.0's
// longest is 12,972 bytes).
const maxLine = 1 << 20

// OpenAncestors reads from data.noun in dir (see Dir) only the synsets
// wnids name and their ancestors (hypernyms and instance hypernyms, up to
// entity), each at the byte offset its wnid is: what a label set's
// hypernym graph needs, in about a millisecond where Open parses all 82,115
// synsets (~0.1 s, on every training run's path to its first step). The
// DB holds those synsets only (Len, Nouns; Synset reports any other wnid
// as unknown); index.noun is read as Open's is, on the first Lookup,
// whose synsets must then be among them.
func OpenAncestors(dir string, wnids []string) (*DB, error) {
	dir = Dir(dir)
	path := filepath.Join(dir, "data.noun")
	f, err := os.Open(path)
	if err != nil {
		return nil, dataNounError(path, err)
	}
	defer f.Close()
	wn := &DB{dir: dir, synsets: map[string]*Synset{}}
	queue := append([]string(nil), wnids...)
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		if _, ok := wn.synsets[id]; ok {
			continue
		}
		s, err := readSynsetAt(f, path, id)
		if err != nil {
			return nil, err
		}
		wn.synsets[id] = s
		wn.order = append(wn.order, s)
		queue = append(queue, s.Parents()...)
	}
	return wn, nil
}

// readSynsetAt parses the data.noun line at the byte offset wnid names.
// A wnid whose offset starts no synset line is ErrUnknownSynset, as
// DB.Synset reports it.
func readSynsetAt(f *os.File, path, wnid string) (*Synset, error) {
	if !validWNID(wnid) {
		return nil, fmt.Errorf("%q is not a noun wnid (expected n followed by 8 digits): %w", wnid, ErrUnknownSynset)
	}
	unknown := fmt.Errorf("%s: no noun synset at offset %s of %s: %w", wnid, wnid[1:], path, ErrUnknownSynset)
	off, _ := strconv.ParseInt(wnid[1:], 10, 64) // validWNID: 8 digits
	// The byte before a line is its predecessor's newline.
	start := max(off-1, 0)
	line, err := readLineAt(f, start)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, unknown
		}
		return nil, fmt.Errorf("wordnet: %s at byte %d: %w", path, off, err)
	}
	if off > 0 {
		if line[0] != '\n' {
			return nil, unknown
		}
		line = line[1:]
	}
	if len(line) < 8 || string(line[:8]) != wnid[1:] {
		return nil, unknown
	}
	s, err := parseDataLine(string(line))
	if err != nil {
		return nil, fmt.Errorf("wordnet: %s at byte %d (%s): %w", path, off, wnid, err)
	}
	return s, nil
}

// readLineAt reads the byte at off and what follows it up to the next
// newline (not included) or the end of the file, at most maxLine bytes;
// io.EOF when off is at or past the end. The byte at off is not searched:
// it is the newline that ends the line before.
func readLineAt(f *os.File, off int64) ([]byte, error) {
	// One byte more than the limit allows tells a line that ends at the
	// limit from one that goes on.
	r := bufio.NewReader(io.NewSectionReader(f, off, 1+maxLine+1))
	first, err := r.ReadByte()
	if err != nil {
		return nil, err
	}
	rest, err := r.ReadBytes('\n')
	if err != nil && err != io.EOF {
		return nil, err
	}
	rest = bytes.TrimSuffix(rest, []byte{'\n'})
	if 1+len(rest) > maxLine {
		return nil, fmt.Errorf("line longer than %d bytes (the limit)", maxLine)
	}
	return append([]byte{first}, rest...), nil
}
