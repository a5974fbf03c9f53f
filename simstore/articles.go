package simstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	badger "github.com/dgraph-io/badger/v4"
)

// Article is the document stored for one class of a label set.
type Article struct {
	LabelSet  string    `json:"label_set"`
	ClassID   string    `json:"class_id"`
	WNID      string    `json:"wnid,omitempty"`
	Title     string    `json:"title"`  // article title(s), " | "-joined when several
	Text      string    `json:"text"`   // plain text
	Source    string    `json:"source"` // api, dump, wordnet, dir
	Revision  string    `json:"revision,omitempty"`
	Reason    string    `json:"reason,omitempty"` // how the title was chosen: override, exact, scored, fallback
	FetchedAt time.Time `json:"fetched_at"`
	Checksum  string    `json:"checksum"` // sha256 of Text, filled by PutArticle
}

func textChecksum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// prepare checks an article and fills its checksum and fetch time.
func (a *Article) prepare() error {
	if a.LabelSet == "" || a.ClassID == "" {
		return fmt.Errorf("simstore: article needs a label set and a class id (got %q, %q)", a.LabelSet, a.ClassID)
	}
	a.Checksum = textChecksum(a.Text)
	if a.FetchedAt.IsZero() {
		a.FetchedAt = time.Now().UTC()
	}
	return nil
}

// PutArticles stores articles in one transaction, or in several when they do
// not fit in one: then each batch is atomic and a cancelled context stops
// between batches.
func (s *Store) PutArticles(ctx context.Context, arts ...Article) error {
	for len(arts) > 0 {
		n := 0
		err := s.Update(ctx, func(tx *Tx) error {
			for n = 0; n < len(arts); n++ {
				if err := tx.PutArticle(arts[n]); err != nil {
					if errors.Is(err, badger.ErrTxnTooBig) && n > 0 {
						return nil // commit what fits, continue in the next batch
					}
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("simstore: write articles: %w", err)
		}
		arts = arts[n:]
	}
	return nil
}

// GetArticle returns the article of one class, ErrNotFound if none.
func (s *Store) GetArticle(ctx context.Context, labelSet, classID string) (*Article, error) {
	return s.articleByKey(ctx, articleKey(labelSet, classID))
}

func (s *Store) articleByKey(ctx context.Context, key []byte) (*Article, error) {
	var a Article
	if _, err := s.get(ctx, key, KindArticle, &a); err != nil {
		return nil, err
	}
	if a.Checksum != textChecksum(a.Text) {
		return nil, corrupt(key, "article text does not match its checksum")
	}
	return &a, nil
}

// ListArticles returns every stored article of a label set, in key order.
func (s *Store) ListArticles(ctx context.Context, labelSet string) ([]Article, error) {
	prefix := string(articleKey(labelSet, "")) // ends with "/"
	prefix = strings.TrimSuffix(prefix, "/") + "/"
	var out []Article
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: true, PrefetchSize: 64, Prefix: []byte(prefix)})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			item := it.Item()
			var a Article
			val, err := readValue(txn, item)
			if err != nil {
				return err
			}
			if _, err := decode(item.Key(), KindArticle, val, &a); err != nil {
				return err
			}
			out = append(out, a)
		}
		return nil
	})
	return out, err
}
