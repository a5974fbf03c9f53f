//go:build !cgo || noturbo

package data

import (
	"errors"
	"image"
)

const turboBuilt = false

func turboHeader([]byte) (int, int, bool, error) { return 0, 0, false, nil }

func decodeTurbo([]byte, int, *image.YCbCr, func(w, h, hf, vf int) (int, int, int)) (*image.YCbCr, error) {
	return nil, errors.New("built without libjpeg-turbo")
}
