package simstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	badger "github.com/dgraph-io/badger/v4"

	"github.com/lcl-project/lcl/internal/bounded"
	"github.com/lcl-project/lcl/internal/trust"
)

// checkFolder is what Open checks before Badger opens dir: that it holds a
// store (ErrNotFound otherwise), that nobody else can write it
// (ErrUntrusted), that its MANIFEST is there when tables or logs are, and
// that every table's index reads (ErrDamaged). It writes nothing.
func checkFolder(dir string, exclusive bool) error {
	st, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("simstore: no store in %s yet (nothing has been stored there): %w", bounded.Quote(dir), ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("simstore: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("simstore: %s is not a folder", bounded.Quote(dir))
	}
	if err := trust.Check(dir); err != nil {
		return tagged(ErrUntrusted, "simstore: store %s refused: %s (someone else could change what lcl reads and writes there)", bounded.Quote(dir), err)
	}
	release, err := lockDir(dir, exclusive)
	if err != nil {
		return err
	}
	defer release()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("simstore: %w", err)
	}
	l := listFolder(entries)
	tables, logs := l.tables, l.logs
	if !l.manifest {
		if len(tables)+logs == 0 {
			return fmt.Errorf("simstore: no store in %s yet (nothing has been stored there): %w", bounded.Quote(dir), ErrNotFound)
		}
		return tagged(ErrDamaged, "simstore: %s: its MANIFEST is missing, but it holds %d table and %d log files (opening it would start an empty store over them, overwriting a table); the store is damaged: restore the folder from a backup",
			bounded.Quote(dir), len(tables), logs)
	}
	slices.Sort(tables)
	o := badger.DefaultOptions("")
	for _, t := range tables {
		if reason := tableIndexProblem(filepath.Join(dir, t), o); reason != "" {
			return damagedTableError(dir, t)
		}
	}
	return nil
}

// folderFiles are the files of a store folder that matter to Open.
type folderFiles struct {
	manifest bool
	tables   []string // *.sst
	logs     int      // *.vlog and *.mem
}

func listFolder(entries []fs.DirEntry) folderFiles {
	var l folderFiles
	for _, e := range entries {
		switch n := e.Name(); {
		case n == badger.ManifestFilename:
			l.manifest = true
		case strings.HasSuffix(n, ".sst"):
			l.tables = append(l.tables, n)
		case strings.HasSuffix(n, ".vlog"), strings.HasSuffix(n, ".mem"):
			l.logs++
		}
	}
	return l
}

func damagedTableError(dir, table string) error {
	return tagged(ErrDamaged, "simstore: %s: table file %s is damaged (its index or last block fails Badger's checksum), so the store cannot be opened; restore the folder from a backup (lcl store verify lists every damaged table)",
		bounded.Quote(dir), bounded.Quote(table))
}

// taggedError is a message that wraps a sentinel it does not spell out.
type taggedError struct {
	msg string
	tag error
}

func (e *taggedError) Error() string { return e.msg }
func (e *taggedError) Unwrap() error { return e.tag }

func tagged(tag error, format string, a ...any) error {
	return &taggedError{msg: fmt.Sprintf(format, a...), tag: tag}
}

// Recover opens the store in dir for writing and closes it again: Badger
// replays its log and drops an entry a killed process left incomplete
// (every committed record is kept: commits are synced). It is what a
// read-only Open that failed with ErrNeedsRecovery asks for.
func Recover(dir string) error {
	if err := checkFolder(dir, true); err != nil {
		return err // no store to recover (nothing is created), or damaged
	}
	s, err := Open(dir)
	if err != nil {
		return err
	}
	return s.Close()
}
