//go:build !unix

package simstore

import "io/fs"

func allocated(fi fs.FileInfo) int64 { return fi.Size() }
