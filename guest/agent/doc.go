// Package agent is the guest's side of package wire's contract: what PID 1
// of the lpmbisect initramfs (cmd/lpmbisect-guest) does between the kernel
// starting /init and the VM powering off. Package wire says what crosses
// between host and guest (the run plan, the results stream and its trailer,
// the ready/go and flush/ack lines); this package does the guest's part of
// it on a real kernel:
//
//   - system set-up of PID 1 (system.go): the file systems it mounts, the
//     console, and powering off;
//   - the modules the host packed (modules.go), loaded in the order of
//     wire.LoadOrderFile, for a virtio-serial results port;
//   - finding and opening the results channel (port.go): the virtio port
//     called wire.Plan.Port under /sys/class/virtio-ports, else the serial
//     fallback as a raw line, else standard output when run by hand;
//   - the channel itself (channel.go): raw write(2) and bounded reads, and
//     the flush marker the guest writes after its last line and the host's
//     ack it waits for before powering off;
//   - pacing (pace.go): the ready note before each step and the host's go;
//   - the run of a boot (run.go), in phases: set-up, channel, benchmarks
//     (package workloads), the insight pass (insightpass.go), the trailer, and
//     the flush;
//   - the program's main (main.go: Main), which cmd/lpmbisect-guest calls;
//   - the hook of the tests' faults (inject.go: Injector): the tests' guest
//     (testbed/guestfaults) wraps the channel and the results output to
//     misbehave on purpose; the guest lpmbisect packs has no injector, and
//     its results go straight to the wire.Writer.
//
// Why a package of its own, and not wire or workloads: wire is linked by the
// host as well and stays free of system calls and of the guest's clock;
// workloads measures BPF and knows nothing of channels, modules or PID 1.
// This package owns what only the guest program does, so that its protocol
// is tested here, with a socket pair as the port, and the command stays a
// thin main.
//
// Adding a phase (say, a profile pass after the samples): write it as a
// method of boot, call it from boot.stream at its place in the order, and
// send what it produces through the boot's wire.Writer (before the trailer,
// to be in its checksum) or after the trailer as the insight document is.
//
// The guest binary must stay small and boot fast, so this package imports
// nothing host-only (no SQLite, no plotting, no PostgreSQL or River): only
// the standard library, x/sys, cilium/ebpf and benchfmt through workloads,
// bpf and wire. cmd/lpmbisect-guest's tests check its dependency list.
//
// Run by hand as a process other than PID 1 (as root, on a kernel with BPF),
// a boot neither loads modules nor waits for a port: it writes the stream to
// standard output and reads the host's lines from standard input.
package agent
