package view_test

import (
	"fmt"

	"github.com/lpmbisect/lpmbisect/present/view"
)

func ExampleReproduction_Command() {
	r := view.Reproduction{Flags: []string{"--accel", "icount", "--bench", "lookup"},
		Before: "bpf-next-2026-11-07/bzImage", After: "bpf-next 2026-11-08/bzImage"}
	fmt.Println(r.Command())
	// Output:
	// lpmbisect compare --accel icount --bench lookup bpf-next-2026-11-07/bzImage 'bpf-next 2026-11-08/bzImage'
}
