package similarity

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/lcl-project/lcl/internal/crash"
)

// parallelDynamic runs fn(0), …, fn(n−1) on every CPU, each worker taking
// the next index as it finishes one, so uneven items (the long first rows
// of a triangle) do not leave a CPU idle.
func parallelDynamic(n int, fn func(i int)) {
	_ = parallelDynamicCtx(context.Background(), n, fn)
}

// parallelDynamicCtx is parallelDynamic that stops handing out items once
// ctx is done and then returns its error (items already started finish).
func parallelDynamicCtx(ctx context.Context, n int, fn func(i int)) error {
	w := min(runtime.GOMAXPROCS(0), n)
	if w <= 1 {
		for i := 0; i < n; i++ {
			if err := ctx.Err(); err != nil {
				return err
			}
			fn(i)
		}
		return nil
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range w {
		wg.Add(1)
		go func() {
			defer crash.Handle() // a panic here is a bug: one line, a report, exit 70
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				fn(i)
			}
		}()
	}
	wg.Wait()
	return ctx.Err()
}
