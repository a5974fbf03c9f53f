package simstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	badger "github.com/dgraph-io/badger/v4"
	badgeropt "github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/dgraph-io/badger/v4/y"
	"github.com/dgraph-io/ristretto/v2/z"
)

// Problem is one damaged thing Verify found: a record (Key) or a table
// file (File).
type Problem struct {
	Key    string `json:"key,omitempty"`
	File   string `json:"file,omitempty"`
	Reason string `json:"reason"`
}

func (p Problem) String() string {
	if p.File != "" {
		return "table " + p.File + ": " + p.Reason
	}
	return "key " + strconv.Quote(p.Key) + ": " + p.Reason
}

// VerifyTables checks every table file (*.sst) of the store in dir against
// Badger's checksums, the index's and every data block's, without opening
// the store, so it works on a store that no longer opens. A damaged data
// block is what ordinary reads do not detect: records in it may vanish from
// listings or read wrong.
func VerifyTables(dir string) (tables int, problems []Problem, err error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	if err != nil {
		return 0, nil, err
	}
	sort.Strings(files)
	defaults := badger.DefaultOptions("")
	for _, f := range files {
		tables++
		if reason := verifyTable(f, defaults); reason != "" {
			problems = append(problems, Problem{File: filepath.Base(f), Reason: reason})
		}
	}
	return tables, problems, nil
}

// verifyTable returns why the table at path is damaged, or "".
func verifyTable(path string, o badger.Options) (reason string) {
	mf, err := z.OpenMmapFile(path, os.O_RDONLY, 0)
	if err != nil && !errors.Is(err, z.NewFile) {
		return err.Error()
	}
	var t *table.Table
	defer func() {
		// Badger's table code asserts rather than returns on some damage.
		if v := recover(); v != nil {
			reason = fmt.Sprintf("unreadable (%v)", v)
		}
		if t != nil {
			t.MmapFile.Close(-1) // never DecrRef: at zero it deletes the file
		} else {
			mf.Close(-1)
		}
	}()
	t, err = table.OpenTable(mf, table.Options{ReadOnly: true, ChkMode: badgeropt.OnBlockRead,
		BlockSize: o.BlockSize, Compression: o.Compression, BloomFalsePositive: o.BloomFalsePositive})
	if err != nil {
		t = nil
		return "its index or last block is damaged, so the store cannot be opened (" + oneLine(err.Error()) + ")"
	}
	if err := verifyBlocks(t); err != nil {
		return fmt.Sprintf("a data block fails its checksum: records with keys from %q to %q may be missing from listings or unreadable (%s)",
			y.ParseKey(t.Smallest()), y.ParseKey(t.Biggest()), err)
	}
	return ""
}

// verifyBlocks is Table.VerifyChecksum, which dereferences the block it
// failed to read when it reports the failure: the panic is the report.
func verifyBlocks(t *table.Table) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = errors.New("block checksum mismatch")
		}
	}()
	if err := t.VerifyChecksum(); err != nil {
		return errors.New(oneLine(err.Error()))
	}
	return nil
}

// Verify reads every record and checks it (its CRC-32C, its chunks, the
// value log's checksum) and every key (a damaged key no longer names a
// record); it returns how many records it read and what is damaged.
// progress, if set, is called once per record.
func (s *Store) Verify(ctx context.Context, progress func()) (records int, problems []Problem, err error) {
	var keys [][]byte
	err = s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: false})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			keys = append(keys, it.Item().KeyCopy(nil))
		}
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	for _, k := range keys {
		if err := ctx.Err(); err != nil {
			return records, problems, err
		}
		key := string(k)
		switch p, _, _ := cutPrefix(key); {
		case p == prefixChunk:
			continue // read with the record whose manifest names it
		case p == prefixMeta:
			if key == keySchema {
				if _, _, err := s.storedSchema(); err != nil {
					problems = append(problems, Problem{Key: key, Reason: oneLine(err.Error())})
				}
			}
			continue
		case kindOfKey(k) == "":
			problems = append(problems, Problem{Key: key, Reason: "not a record key (damaged, or written by something else than lcl)"})
			continue
		}
		records++
		if _, err := s.Record(ctx, key); err != nil {
			problems = append(problems, Problem{Key: key, Reason: reasonOf(err)})
		}
		if progress != nil {
			progress()
		}
	}
	return records, problems, nil
}

func cutPrefix(key string) (string, string, bool) {
	for i := 0; i < len(key); i++ {
		if key[i] == '/' {
			return key[:i], key[i+1:], true
		}
	}
	return key, "", false
}

// reasonOf is an error without its key (the Problem names it).
func reasonOf(err error) string {
	var ce *CorruptError
	if errors.As(err, &ce) {
		return ce.Reason
	}
	return oneLine(err.Error())
}
