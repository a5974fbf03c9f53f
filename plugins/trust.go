package plugins

import (
	"os"

	"github.com/lcl-project/lcl/internal/trust"
)

// CheckTrusted decides whether lcl may run (or believe) the file at path
// (trust.Check): the file, and every folder from it up to the root, must
// be owned by the user running lcl or by root and be writable by nobody
// else. It returns nil or an error whose message is one line naming the
// file or folder, what is wrong and how to fix it, e.g.
//
//	folder /srv/plugins is writable by others (mode drwxrwxrwx; chmod o-w /srv/plugins)
func CheckTrusted(path string) error { return trust.Check(path) }

// judge is trust.Judge (kept for the tests of this package's rule).
func judge(p string, folder bool, uid int, mode os.FileMode, me int) error {
	return trust.Judge(p, folder, uid, mode, me)
}
