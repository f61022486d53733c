package kbuild

import _ "embed"

// builtinFragment is configs/lpmbisect.config beside this file: what a
// kernel needs to boot under QEMU with the lpmbisect guest and run the BPF
// benchmarks. It is built into the binary, so a build needs no checkout of
// this repository.
//
//go:embed configs/lpmbisect.config
var builtinFragment []byte

// builtinFragmentName names the built-in fragment in logs and results.
const builtinFragmentName = "configs/lpmbisect.config"
