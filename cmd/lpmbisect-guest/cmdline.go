package main

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/lpmbisect/lpmbisect/wire"
	"github.com/lpmbisect/lpmbisect/workloads"
)

// Kernel command line parameters read by the guest. All are optional.
const (
	paramBench   = "lpmbisect.bench"   // regexp on full result names [defaultBench]
	paramSamples = "lpmbisect.samples" // samples per benchmark [5]
	paramEntries = "lpmbisect.entries" // trie size [10000]
	paramRounds  = "lpmbisect.rounds"  // program runs per sample [20]
	// LPM key prefix length [32]; 2^prefix_len must be ≥ entries.
	paramPrefixLen = "lpmbisect.prefix_len"
	// elements of the MapBatch maps [workloads.DefaultBatchEntries]
	paramBatchEntries = "lpmbisect.batch_entries"
	paramAccel        = "lpmbisect.accel" // kvm | tcg | icount: the accel config line
	paramPort         = "lpmbisect.port"  // virtio-serial port name [wire.PortName]
	paramFault        = "lpmbisect.fault" // TEST-ONLY: misbehave after the first result
	// 1: stop before every step and wait for the host's go (see wire.Go)
	paramPaced = "lpmbisect.paced"
)

const defaultBench = workloads.DefaultBench

// Accelerator labels the host may pass in lpmbisect.accel.
const (
	accelKVM    = "kvm"
	accelTCG    = "tcg"
	accelIcount = "icount" // TCG with -icount shift=0: the clock counts instructions
)

// Faults are TEST-ONLY misbehaviours that let the host's fault handling be
// tested against a real guest. Each applies after the first result line has
// been written; a boot that writes no result never applies its fault.
const (
	faultHang     = "hang"     // stop writing and block forever, no power-off
	faultFlood    = "flood"    // write valid benchmark lines in an endless loop
	faultLongline = "longline" // write one endless line with no newline
	faultGarbage  = "garbage"  // write endless pseudo-random bytes
	faultPanic    = "panic"    // crash the kernel via /proc/sysrq-trigger 'c'
	faultExit     = "exit"     // PID 1 exits, which panics the kernel
	// faultNoBPF acts at once, not after the first result: bpf() answers
	// ENOSYS, as on a kernel built without CONFIG_BPF_SYSCALL.
	faultNoBPF = "nobpf"
)

var faults = []string{faultHang, faultFlood, faultLongline, faultGarbage, faultPanic, faultExit, faultNoBPF}

// config is what the kernel command line asks of this boot.
type config struct {
	bench  *regexp.Regexp
	params workloads.Params
	accel  string // "" when the host did not say
	port   string
	fault  string // "" for a normal boot
	paced  bool   // wait for the host's go before every step
	// unknown lists lpmbisect.* parameters this guest does not know.
	unknown []string
}

// parseCmdline parses the kernel command line (the contents of
// /proc/cmdline). Parameters other than lpmbisect.* are ignored; a later
// repetition of a parameter overrides an earlier one, as the kernel does for
// most parameters. A malformed value is an error: running a different
// benchmark than the host asked for would mislabel its results.
func parseCmdline(cmdline string) (config, error) {
	c := config{
		params: workloads.DefaultParams,
		port:   wire.PortName,
	}
	bench := defaultBench
	for _, arg := range splitCmdline(cmdline) {
		key, val, _ := strings.Cut(arg, "=")
		if !strings.HasPrefix(key, "lpmbisect.") {
			continue
		}
		var err error
		switch key {
		case paramBench:
			bench = val
		case paramSamples:
			c.params.Samples, err = parseInt(val, 1, 1_000_000)
		case paramEntries:
			var n int
			n, err = parseInt(val, 1, math.MaxInt32)
			c.params.Entries = uint32(n)
		case paramRounds:
			c.params.Rounds, err = parseInt(val, 1, math.MaxInt32)
		case paramPrefixLen:
			var n int
			n, err = parseInt(val, 1, 32)
			c.params.PrefixLen = uint32(n)
		case paramBatchEntries:
			var n int
			n, err = parseInt(val, 1, workloads.MaxBatchEntries)
			c.params.BatchEntries = uint32(n)
		case paramAccel:
			switch val {
			case accelKVM, accelTCG, accelIcount:
				c.accel = val
			default:
				err = fmt.Errorf("want %s, %s or %s", accelKVM, accelTCG, accelIcount)
			}
		case paramPort:
			if val == "" || strings.ContainsAny(val, "/\x00") {
				err = fmt.Errorf("not a port name")
			}
			c.port = val
		case paramPaced:
			var n int
			n, err = parseInt(val, 0, 1)
			c.paced = n == 1
		case paramFault:
			err = fmt.Errorf("want one of %s", strings.Join(faults, ", "))
			for _, f := range faults {
				if val == f {
					c.fault, err = val, nil
				}
			}
		default:
			c.unknown = append(c.unknown, key)
		}
		if err != nil {
			return config{}, fmt.Errorf("kernel command line: %s=%q: %w", key, val, err)
		}
	}
	if err := c.params.Validate(); err != nil {
		return config{}, fmt.Errorf("kernel command line: %w", err)
	}
	re, err := regexp.Compile(bench)
	if err != nil {
		return config{}, fmt.Errorf("kernel command line: %s=%q: %w", paramBench, bench, err)
	}
	c.bench = re
	if c.accel == accelIcount {
		c.params.Clock = workloads.InstructionClock
	}
	return c, nil
}

// parseInt parses a decimal integer in [lo, hi].
func parseInt(s string, lo, hi int) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("not an integer")
	}
	if n < lo || n > hi {
		return 0, fmt.Errorf("out of range [%d, %d]", lo, hi)
	}
	return n, nil
}

// splitCmdline splits a kernel command line into parameters the way the
// kernel's next_arg does: at spaces outside double quotes, with the quotes
// removed, so both param="a b" and "param=a b" give `param=a b`.
func splitCmdline(s string) []string {
	var args []string
	var cur strings.Builder
	inQuote, inArg := false, false
	for _, r := range s {
		switch {
		case r == '"':
			inQuote = !inQuote
			inArg = true
		case !inQuote && (r == ' ' || r == '\t' || r == '\n'):
			if inArg {
				args = append(args, cur.String())
				cur.Reset()
				inArg = false
			}
		default:
			cur.WriteRune(r)
			inArg = true
		}
	}
	if inArg {
		args = append(args, cur.String())
	}
	return args
}
