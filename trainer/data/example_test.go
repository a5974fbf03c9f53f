package data_test

import (
	"context"
	"fmt"
	"io"
	"log"

	"github.com/lcl-project/lcl/trainer/data"
)

// A training epoch over 10% of the training split (the paper's DR), then an
// evaluation pass over the whole test split.
func Example() {
	sp, err := data.ParseSpec("fashion-mnist?flip=true") // Debian's default path
	if err != nil {
		log.Fatal(err)
	}
	sp.Options.SkipBad = false // --skip-bad would set this and LoaderConfig.SkipBad
	train, test, err := sp.Open()
	if err != nil {
		log.Fatal(err)
	}
	subset, err := data.Fraction(train, 0.1, 1)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	for epoch := range 1 {
		l, err := data.NewLoader(ctx, train, data.LoaderConfig{Pass: data.Pass{Indices: subset, Batch: 128, Shuffle: true, Seed: 1, Train: true}, Epoch: epoch, Workers: 2})
		if err != nil {
			log.Fatal(err)
		}
		n := 0
		for {
			b, err := l.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				log.Fatal(err)
			}
			n += b.N // train on b.X (N×1×28×28) and b.Y here
			b.Release()
		}
		l.Close()
		fmt.Println("epoch", epoch, "trained on", n, "examples")
	}
	l, err := data.NewLoader(ctx, test, data.LoaderConfig{Pass: data.Pass{Batch: 1000}})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	fmt.Println("evaluating on", test.Len(), "examples in", l.Len(), "batches")
	// Output:
	// epoch 0 trained on 6000 examples
	// evaluating on 10000 examples in 10 batches
}
