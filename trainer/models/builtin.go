package models

import (
	"fmt"
	"strconv"
)

// Reference inputs of published parameter counts.
var (
	imageNet  = Input{C: 3, H: 224, W: 224, NumClasses: 1000}
	imageNet2 = Input{C: 3, H: 299, W: 299, NumClasses: 1000}
	cifar10   = Input{C: 3, H: 32, W: 32, NumClasses: 10}
	cifar100  = Input{C: 3, H: 32, W: 32, NumClasses: 100}
	fmnist    = Input{C: 1, H: 28, W: 28, NumClasses: 10}
)

// Builtin returns a registry holding lcl's architectures: the nine of the
// paper (resnet18/34/50/101, wrn-28-10, resnext101-32x8d, senet154,
// inception-resnet-v2, densenet-bc-190-40), their families with options,
// and the small mlp and cnn. Each architecture file (small.go, resnet.go,
// senet.go, inception.go, densenet.go) describes its networks and
// registers them: builder, options, reference count and default preset.
func Builtin() *Registry {
	r := &Registry{}
	for _, register := range []func(*Registry) error{
		registerSmall, registerResNets, registerWRN, registerSENet, registerInception, registerDenseNets,
	} {
		if err := register(r); err != nil {
			panic(err) // a name registered twice: a bug of this package
		}
	}
	return r
}

// stem reads stem=auto|cifar|imagenet: auto is the CIFAR stem for inputs
// of at most 64 pixels a side.
func (o Options) stem(in Input) (cifar bool, err error) {
	switch o["stem"] {
	case "", "auto":
		return in.H <= 64 && in.W <= 64, nil
	case "cifar":
		return true, nil
	case "imagenet":
		return false, nil
	}
	return false, fmt.Errorf("option stem=%q: want auto, cifar or imagenet", o["stem"])
}

func (o Options) bool(key string, def bool, want string) (bool, error) {
	v, ok := o[key]
	if !ok {
		return def, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("option %s=%q: want %s", key, v, want)
	}
	return b, nil
}

// fraction parses a number in (0, 1].
func (o Options) fraction(key string, def float64) (float64, error) {
	v, ok := o[key]
	if !ok {
		return def, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || !(f > 0 && f <= 1) {
		return 0, fmt.Errorf("option %s=%q: want a number in (0,1]", key, v)
	}
	return f, nil
}
