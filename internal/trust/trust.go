// Package trust decides whether lcl may run, or believe, a file that
// someone else might have written: a plugin, a TorchScript model, the
// store. The rule is OpenSSH's for authorized_keys: the file, and every
// folder from it up to the root, must be owned by the user running lcl or
// by root and be writable by nobody else.
package trust

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
)

// Check decides whether lcl may run (or believe) the file or folder at
// path: it, and every folder from it up to the root, must be owned by the
// user running lcl or by root and be writable by nobody else: not by the
// group, not by others. A folder with the sticky bit (such as /tmp) may be
// writable by others, since nobody can rename or replace another user's
// entries in it. A symbolic link is followed, and the folders above both
// the link and its target are checked.
//
// It returns nil or an error whose message is one line naming the file or
// folder, what is wrong and how to fix it, e.g.
//
//	folder /srv/plugins is writable by others (mode drwxrwxrwx; chmod o-w /srv/plugins)
//
// Whoever can write the file, or replace it through a folder above it, can
// run code as (or feed data to) the user who runs lcl.
func Check(path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return err
	}
	st, err := os.Stat(real)
	if err != nil {
		return err
	}
	if err := checkOwnerMode(real, st.IsDir()); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, p := range []string{abs, real} {
		for dir := filepath.Dir(p); !seen[dir]; dir = filepath.Dir(dir) {
			seen[dir] = true
			if err := checkOwnerMode(dir, true); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkOwnerMode checks one file or folder (following symbolic links).
func checkOwnerMode(p string, folder bool) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	uid, ok := ownerOf(fi)
	if !ok {
		return nil // no owners on this system
	}
	return Judge(p, folder, uid, fi.Mode(), os.Geteuid())
}

// Judge applies the rule of Check to one file or folder owned by uid, with
// mode, for the user me.
func Judge(p string, folder bool, uid int, mode os.FileMode, me int) error {
	what := "file"
	if folder {
		what = "folder"
	}
	if uid != 0 && uid != me {
		return fmt.Errorf("%s %s is owned by %s, not by you (%s) or root", what, p, userName(uid), userName(me))
	}
	if folder && mode&os.ModeSticky != 0 {
		return nil
	}
	switch {
	case mode.Perm()&0o002 != 0:
		return fmt.Errorf("%s %s is writable by others (mode %s; chmod o-w %s)", what, p, mode, p)
	case mode.Perm()&0o020 != 0:
		return fmt.Errorf("%s %s is writable by its group (mode %s; chmod g-w %s)", what, p, mode, p)
	}
	return nil
}

func userName(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return u.Username
	}
	return "uid " + strconv.Itoa(uid)
}
