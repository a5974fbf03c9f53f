package simstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	badger "github.com/dgraph-io/badger/v4"
	badgeropt "github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/dgraph-io/badger/v4/y"
	"github.com/dgraph-io/ristretto/v2/z"

	"github.com/lcl-project/lcl/internal/bounded"
)

// Problem is one damaged thing Verify found: a record (Key) or a table
// file (File).
type Problem struct {
	Key    string `json:"key,omitempty"`
	File   string `json:"file,omitempty"`
	Reason string `json:"reason"`
}

func (p Problem) String() string {
	if strings.HasSuffix(p.File, ".sst") {
		return "table " + bounded.Quote(p.File) + ": " + p.Reason
	}
	if p.File != "" {
		return "file " + bounded.Quote(p.File) + ": " + p.Reason
	}
	return "key " + strconv.Quote(p.Key) + ": " + p.Reason
}

// VerifyTables checks every table file (*.sst) of the store in dir against
// Badger's checksums, the index's and every data block's, without opening
// the store, so it works on a store that no longer opens. A damaged data
// block is what ordinary reads do not detect: records in it may vanish from
// listings or read wrong. A missing MANIFEST beside tables or logs is a
// problem too (Badger would start an empty store over them).
func VerifyTables(dir string) (tables int, problems []Problem, err error) {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return 0, nil, nil // no store: nothing to check
	}
	// A writer rewrites tables as it goes: check only while none can.
	release, err := lockDir(dir, false)
	if err != nil {
		return 0, nil, err
	}
	defer release()
	files, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	if err != nil {
		return 0, nil, err
	}
	sort.Strings(files)
	if entries, err := os.ReadDir(dir); err == nil {
		if l := listFolder(entries); !l.manifest && len(l.tables)+l.logs > 0 {
			problems = append(problems, Problem{File: badger.ManifestFilename, Reason: fmt.Sprintf(
				"missing: the store's list of its files is gone (%d table and %d log files remain), so it cannot be opened without losing them",
				len(l.tables), l.logs)})
		}
	}
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
func verifyTable(path string, o badger.Options) string {
	return withTable(path, o, func(t *table.Table) string {
		if err := verifyBlocks(t); err != nil {
			return fmt.Sprintf("a data block fails its checksum: records with keys from %q to %q may be missing from listings or unreadable (%s)",
				y.ParseKey(t.Smallest()), y.ParseKey(t.Biggest()), err)
		}
		return ""
	})
}

// tableIndexProblem returns why Badger cannot open the table at path (its
// index, or its last block, is damaged), or "": what Open checks first.
func tableIndexProblem(path string, o badger.Options) string {
	return withTable(path, o, func(*table.Table) string { return "" })
}

// withTable opens the table at path read-only, as Badger does when it
// opens the store, and returns why it cannot, or what check says.
func withTable(path string, o badger.Options, check func(*table.Table) string) (reason string) {
	if st, err := os.Stat(path); err == nil && st.Size() == 0 {
		return "its index or last block is damaged, so the store cannot be opened (the file is empty)"
	}
	mf, err := z.OpenMmapFile(path, os.O_RDONLY, 0)
	if err != nil {
		return oneLine(err.Error())
	}
	var t *table.Table
	defer func() {
		// Badger's table code asserts rather than returns on some damage
		// (a truncated or zeroed file).
		if v := recover(); v != nil {
			reason = fmt.Sprintf("its index or last block is damaged, so the store cannot be opened (unreadable: %s)", firstLine(fmt.Sprint(v)))
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
	return check(t)
}

// firstLine is the first non-empty line of s (Badger's panic values carry
// a multi-line dump).
func firstLine(s string) string {
	for l := range strings.SplitSeq(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
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
