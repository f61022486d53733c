// Package configs holds the kernel configuration fragment that lpmbisect
// builds kernels with (lpmbisect.config beside this file), so the binary
// carries it and a build needs no checkout of this repository.
package configs

import _ "embed"

// Fragment is the content of lpmbisect.config: what a kernel needs to boot
// under QEMU with the lpmbisect guest and run the BPF benchmarks.
//
//go:embed lpmbisect.config
var Fragment []byte

// FragmentName names the built-in fragment in logs and results.
const FragmentName = "configs/lpmbisect.config"
