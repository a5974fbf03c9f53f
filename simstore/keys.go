package simstore

import (
	"fmt"
	"net/url"
	"strings"
)

// Every key is "<prefix>/<escaped segment>/...": segments are path-escaped so a
// label set named after a file path cannot collide with another key.
const (
	prefixMeta    = "meta"
	prefixArticle = "art"
	prefixVectors = "vec"
	prefixMatrix  = "sim"
	prefixRun     = "run"
	prefixModel   = "model"
	prefixChunk   = "blob"

	keySchema     = "meta/schema"
	prefixPending = "meta/pending/"
)

// Kinds of record, as used by List and shown by `lcl store ls --kind`.
const (
	KindArticle = "article"
	KindVectors = "vectors"
	KindMatrix  = "matrix"
	KindRun     = "run"
	KindModel   = "model"
)

var kindPrefix = map[string]string{
	KindArticle: prefixArticle,
	KindVectors: prefixVectors,
	KindMatrix:  prefixMatrix,
	KindRun:     prefixRun,
	KindModel:   prefixModel,
}

func makeKey(prefix string, segs ...string) []byte {
	var b strings.Builder
	b.WriteString(prefix)
	for _, s := range segs {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(s))
	}
	return []byte(b.String())
}

func articleKey(labelSet, classID string) []byte {
	return makeKey(prefixArticle, labelSet, classID)
}

func vectorsKey(labelSet, model string) []byte { return makeKey(prefixVectors, labelSet, model) }

func matrixKey(labelSet, kind, paramsDigest string) []byte {
	return makeKey(prefixMatrix, labelSet, kind, paramsDigest)
}

func runKey(id string) []byte { return makeKey(prefixRun, id) }

// chunkPrefix holds every chunk of one generation of a large value.
func chunkPrefix(gen string) []byte { return []byte(prefixChunk + "/" + gen + "/") }

func chunkKey(gen string, i uint32) []byte {
	return fmt.Appendf(chunkPrefix(gen), "%08d", i)
}

// pendingKey marks a generation whose chunks are written but whose manifest
// is not committed yet; Open deletes the chunks of every pending generation
// (left by a crash or a failed transaction).
func pendingKey(gen string) []byte { return []byte(prefixPending + gen) }

// kindOfKey returns the record kind a key belongs to, "" for meta keys.
func kindOfKey(key []byte) string {
	p, _, _ := strings.Cut(string(key), "/")
	for k, v := range kindPrefix {
		if v == p {
			return k
		}
	}
	return ""
}
