// Command lpmbisect-guest is PID 1 of the lpmbisect initramfs. It mounts what
// it needs, loads the modules the host packed (to get a virtio-serial
// results port), runs the benchmarks the kernel command line selects, writes
// Go benchmark lines and a trailer to the host (package wire), and powers
// the VM off: on a virtio port only once the host has acknowledged the
// flush marker after its last line (wire.FlushLine), or when the wait for
// that runs out, saying so on the console. Package agent does all of it
// (agent.Main). The tests boot a guest with faults they can arm
// (testbed/guestfaults); this one has none.
//
// The host's run plan comes on the kernel command line as lpmbisect.*
// parameters (wire.Plan, decoded by wire.DecodePlan; all optional, the
// defaults in brackets):
//
//	lpmbisect.bench=REGEXP   benchmarks whose full result name (without the
//	                         Benchmark prefix) matches [LPMTrie/op=lookup]
//	lpmbisect.samples=N      samples per benchmark [5]
//	lpmbisect.entries=N      trie size: dense keys [0,N) at /32 [10000]
//	lpmbisect.rounds=N       XDP test runs per sample, one bpf_loop of
//	                         10000 lookups each [20; 5 under icount:
//	                         wire.DefaultRounds]
//	lpmbisect.prefix_len=N   LPM key prefix length, 2^N ≥ entries [32]
//	lpmbisect.batch_entries=N  elements of the MapBatch maps [100000]
//	lpmbisect.accel=A        kvm, tcg or icount: the accel config line;
//	                         icount makes the unit insn/op instead of ns/op
//	lpmbisect.port=NAME      virtio-serial port name [lpmbisect.results]
//	lpmbisect.paced=1        stop before every step (the start of each
//	                         benchmark, each further sample, the trailer),
//	                         write an lpmbisect-ready note and wait for the
//	                         host's "go" line on the results channel, so the
//	                         host can let two VMs take turns [0]
//	lpmbisect.insight=0|1    1: after the samples, the insight pass: send
//	                         /proc/kallsyms, the benchmark programs' info
//	                         and calls counted per operation (see
//	                         guest/agent/insightpass.go); 0: not in this boot [off]
//	lpmbisect.count=F,G      functions the insight pass counts calls of
//	lpmbisect.kallsyms=1|0   0: the insight pass does not send kallsyms
//	                         (the host has a static symbol source) [1]
//
// A value out of its limits (wire.Plan.Validate) or an unknown lpmbisect.*
// parameter runs nothing: the guest reports the error on the results
// channel (a failed note and the trailer), since running another benchmark
// than the host asked for would mislabel its results.
//
// Results go to the virtio-serial port called lpmbisect.port, found under
// /sys/class/virtio-ports within about 2 s of loading the modules listed
// in wire.LoadOrderFile (/lib/modules/lpmbisect/load-order); failing that, to /dev/ttyS1 in raw
// mode ("channel: serial"). Human-readable progress goes to the console.
//
// Run by hand as a process other than PID 1 (as root, on a kernel with BPF),
// it neither mounts nor loads modules nor powers off, writes the stream to
// standard output, and reads its parameters from $LPMBISECT_CMDLINE if set.
package main

import "github.com/lpmbisect/lpmbisect/guest/agent"

func main() { agent.Main(nil) }
