// Command abicheck prints what the torch binding reports when linked
// (-tags ltshim) with a shim library of another ABI version; see
// TestShimOfAnotherABIVersion.
package main

import (
	"errors"
	"fmt"

	"github.com/lcl-project/lcl/trainer/torch"
)

func main() {
	fmt.Println("version", torch.Version())
	fmt.Println("available", torch.Available())
	err := torch.Check()
	fmt.Printf("Check: mismatch %t: %v\n", errors.Is(err, torch.ErrABIMismatch), err)
	report := func(what string, err error) {
		fmt.Printf("%s: mismatch %t\n", what, errors.Is(err, torch.ErrABIMismatch))
	}
	_, err = torch.NewModel(torch.Spec{InC: 1, InH: 1, InW: 1, NumClasses: 2, Features: torch.Seq("", torch.Flatten()), Head: torch.Seq("", torch.Linear("fc", 1, 2))}, "cpu")
	report("NewModel", err)
	_, err = torch.NewModel(torch.Spec{InC: 1, InH: 1, InW: 1, NumClasses: 2, Script: "m.pt"}, "cpu")
	report("NewModel", err)
	_, err = torch.NewTensor([]float32{1}, []int64{1}, "cpu")
	report("NewTensor", err)
	_, err = torch.NewGroup(torch.GroupConfig{Addr: "127.0.0.1", Port: 1, Size: 1})
	report("NewGroup", err)
	report("SetThreads", torch.SetThreads(1))
	_, err = torch.Threads()
	report("Threads", err)
	report("ManualSeed", torch.ManualSeed(1))
	_, err = torch.CUDADevices()
	report("CUDADevices", err)
	_, err = torch.NewEngine("cpu", torch.EngineOptions{})
	report("NewEngine", err)
	report("SetCUDAFlags", torch.SetCUDAFlags(false, false))
}
