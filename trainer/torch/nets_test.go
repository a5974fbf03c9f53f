//go:build cgo

package torch

import "fmt"

// Small networks for the binding's tests, written with the node
// constructors (trainer/models builds the real architectures, but importing
// it here would be a cycle).

// mlpSpec is flatten, Linear+ReLU layers fc1.., head fc.
func mlpSpec(c, h, w, classes int, hidden ...int) Spec {
	nodes := []Node{Flatten()}
	in := c * h * w
	for i, n := range hidden {
		nodes = append(nodes, Linear(fmt.Sprintf("fc%d", i+1), in, n), ReLU())
		in = n
	}
	return Spec{InC: c, InH: h, InW: w, NumClasses: classes, Features: Seq("", nodes...), Head: Seq("", Linear("fc", in, classes))}
}

// cnnSpec is conv3×3-BN-ReLU-maxpool stages conv1/bn1.., fc1 (+dropout), head fc.
func cnnSpec(inC, inH, inW, classes int, channels []int, fc int, dropout float64) Spec {
	var nodes []Node
	c, h, w := inC, inH, inW
	for i, out := range channels {
		nodes = append(nodes, Conv(fmt.Sprintf("conv%d", i+1), c, out, 3, 1), BN(fmt.Sprintf("bn%d", i+1), out), ReLU(), MaxPool(2, 2, 0))
		c, h, w = out, h/2, w/2
	}
	nodes = append(nodes, Flatten(), Linear("fc1", c*h*w, fc), ReLU())
	if dropout > 0 {
		nodes = append(nodes, Dropout(dropout))
	}
	return Spec{InC: inC, InH: inH, InW: inW, NumClasses: classes, Features: Seq("", nodes...), Head: Seq("", Linear("fc", fc, classes))}
}
