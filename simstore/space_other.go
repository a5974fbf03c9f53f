//go:build !linux

package simstore

import "errors"

func diskFree(string) (int64, error) { return 0, errors.New("free space unknown") }
