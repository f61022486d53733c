package wire

import (
	"fmt"
	"strconv"
)

// The profile pass is part of the insight pass (it runs in the same boot,
// after the calls are counted, and its findings travel in the same
// document): each benchmark's operations run again under a sampling
// perf event whose BPF program counts the kernel instruction pointers it
// interrupts, with the caller of each. The host arms it with
//
//	lpmbisect.profile=P   sample every P units of the event: ns of the
//	                      guest clock (cpu-clock), which under icount
//	                      are instructions
//
// written on every boot of a run beside lpmbisect.insight, so that the
// command lines of the timed boots and of the profiling boot keep one
// length; the pass runs where lpmbisect.insight=1.

// ParamProfile is Plan.ProfilePeriod, written when the plan is armed.
const ParamProfile Param = "lpmbisect.profile"

// Limits of the profile pass.
const (
	// minProfilePeriod is the shortest sample period: the kernel clamps
	// an hrtimer software event's period to at least 10 µs
	// (perf_swevent_set_period), so a shorter one would not sample as
	// often as it says.
	minProfilePeriod = 10_000
	// maxProfilePeriod bounds it above: one sample per second of guest
	// clock would say nothing in a boot.
	maxProfilePeriod = 1_000_000_000
	// MaxProfileSites bounds the (address, caller) pairs of one
	// benchmark's profile, and maxProfileSymbols the names the guest
	// gives to addresses outside the kernel image (BPF programs,
	// modules).
	MaxProfileSites   = 8192
	maxProfileSymbols = 1024
)

// Events a profile samples.
const (
	// EventCPUClock is PERF_COUNT_SW_CPU_CLOCK: under icount its
	// nanoseconds are guest instructions.
	EventCPUClock = "cpu-clock"
	// EventCycles is PERF_COUNT_HW_CPU_CYCLES, under KVM with a PMU.
	EventCycles = "cycles"
)

// ProfileDoc is what the profile pass found on one kernel.
type ProfileDoc struct {
	// Event is EventCPUClock or EventCycles; Weight what its units are
	// ("instructions" under icount, "cycles", "ns").
	Event  string `json:"event"`
	Weight string `json:"weight"`
	// Period is the sample period, in the event's units.
	Period uint64 `json:"period"`
	// Text is the run-time address of _text: the host subtracts the
	// image's link-time .text address from it to undo KASLR.
	Text uint64 `json:"text"`
	// Cost is the guest clock the whole pass took (ns; instructions
	// under icount), set-up and operations included: what the pass adds
	// to its boot.
	Cost uint64 `json:"cost"`
	// Limits are the perf sysctls as the pass set them ("", when it could
	// not read them).
	Limits     string         `json:"limits,omitempty"`
	Benchmarks []BenchProfile `json:"benchmarks,omitempty"`
	// Problem says why there is no profile at all ("" when there is).
	Problem string `json:"problem,omitempty"`
}

// BenchProfile is the samples of one benchmark's operations.
type BenchProfile struct {
	Benchmark string `json:"benchmark"`
	// Ops are the operations the samples span; Unit names one when it is
	// not one of the benchmark's own operations (CallCount.Unit).
	Ops  uint64 `json:"ops"`
	Unit string `json:"unit,omitempty"`
	// Count is the event's count over the operations (ns of the thread's
	// clock): Count/Period samples were due.
	Count uint64 `json:"count"`
	// Samples is how many the BPF program took; Lost those due but not
	// taken (the kernel's throttling), Dropped those taken that did not
	// fit the map.
	Samples uint64 `json:"samples"`
	Lost    uint64 `json:"lost"`
	Dropped uint64 `json:"dropped,omitempty"`
	// Sites are the samples by instruction pointer and caller.
	Sites []ProfileSite `json:"sites,omitempty"`
	// Symbols name the addresses of Sites outside the kernel image.
	Symbols []ProfileSymbol `json:"symbols,omitempty"`
	Problem string          `json:"problem,omitempty"`
}

// ProfileSite is the samples taken at one instruction pointer, called
// from one return address (0: unknown, or user space).
type ProfileSite struct {
	IP      uint64 `json:"ip"`
	Caller  uint64 `json:"caller,omitempty"`
	Samples uint64 `json:"samples"`
}

// ProfileSymbol is a kallsyms symbol outside the kernel image: a BPF
// program's JITed image (Module "bpf") or a module's function.
type ProfileSymbol struct {
	Addr   uint64 `json:"addr"`
	Size   uint64 `json:"size"`
	Name   string `json:"name"`
	Module string `json:"module"`
}

// IsUser reports whether ip is a user-space address (the lower half).
func IsUser(ip uint64) bool { return ip < 1<<63 }

// modulesStart is where x86-64 maps modules and BPF programs
// (MODULES_VADDR, above a 1 GiB kernel image): addresses from there up
// are not in the kernel image.
const modulesStart = 0xffffffffc0000000

// IsModuleArea reports whether ip lies in the module area.
func IsModuleArea(ip uint64) bool { return ip >= modulesStart }

// check applies the list limits.
func (d *ProfileDoc) check() error {
	if d == nil {
		return nil
	}
	if len(d.Benchmarks) > maxInsightPrograms {
		return fmt.Errorf("%w: %d profiles, more than %d", ErrInsightTooLarge, len(d.Benchmarks), maxInsightPrograms)
	}
	for _, b := range d.Benchmarks {
		if len(b.Sites) > MaxProfileSites || len(b.Symbols) > maxProfileSymbols {
			return fmt.Errorf("%w: profile of %s with %d sites and %d symbols, more than %d or %d", ErrInsightTooLarge, b.Benchmark, len(b.Sites), len(b.Symbols), MaxProfileSites, maxProfileSymbols)
		}
	}
	return nil
}

// ProfileArg returns the argument that arms the profile pass at period
// (lpmbisect.profile=P), to add to InsightArgs'; the error is a
// *ParamError.
func ProfileArg(period int) (string, error) {
	if err := checkProfilePeriod(period); err != nil {
		return "", err
	}
	return ParamProfile.Arg(strconv.Itoa(period)), nil
}

func checkProfilePeriod(period int) error {
	if period != 0 && (period < minProfilePeriod || period > maxProfilePeriod) {
		return &ParamError{ParamProfile, strconv.Itoa(period), fmt.Errorf("%w [%d, %d] (the kernel clamps shorter periods to 10 µs)", ErrOutOfRange, minProfilePeriod, maxProfilePeriod)}
	}
	return nil
}
