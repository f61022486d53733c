package vmrunner

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/lpmbisect/lpmbisect/wire"
)

// The memory plugin (memplugin/memcount.c) is a QEMU TCG plugin that
// models per vCPU an L1 data cache, an L1 instruction cache, a unified
// last level cache and a data TLB, and counts their accesses and misses
// inside the windows the guest marks (wire.MemWindowStart …). A boot
// whose Config names it (MemoryPlugin) loads it with an outfile in the
// run directory, which Boot reads back (Result.Memory). scripts/setup
// builds it against the plugin header of Debian's QEMU source package.

// memcountFile is the plugin's outfile in the run directory.
const memcountFile = "memcount.out"

// Bounds of the plugin's file as read back: it writes at most 4096
// segments of at most 256 instruction lines each, and per segment at most
// one exec line per instruction it tracks (262144, and one for all that
// did not fit) and one call line per call edge (65536, and one).
const (
	maxMemcountBytes    = 256 << 20
	maxMemcountSegments = 4096
	maxMemcountPCs      = 256
	maxMemcountExecs    = 1<<18 + 1
	maxMemcountCalls    = 1<<16 + 1
)

// DefaultMemoryPlugin is the plugin's place under a cache directory
// cacheDir: memplugin/memcount.so.
func DefaultMemoryPlugin(cacheDir string) string {
	return filepath.Join(cacheDir, "memplugin", "memcount.so")
}

// memoryPluginPaths are where to look for the plugin when none is named,
// in order: under the cache directory cacheDir (when not ""), then where
// scripts/setup builds it, under the user's cache directory
// (os.UserCacheDir()/lpmbisect: $XDG_CACHE_HOME or ~/.cache), which does
// not move with the cache directory of a run. The plugin is a host tool
// built once, not a cache entry of a run.
func memoryPluginPaths(cacheDir string) []string {
	var out []string
	if cacheDir != "" {
		out = append(out, DefaultMemoryPlugin(cacheDir))
	}
	if base, err := os.UserCacheDir(); err == nil {
		if p := DefaultMemoryPlugin(filepath.Join(base, "lpmbisect")); len(out) == 0 || p != out[0] {
			out = append(out, p)
		}
	}
	return out
}

// FindMemoryPlugin is the first of memoryPluginPaths(cacheDir) that
// exists, and the places it looked; "" when none does.
func FindMemoryPlugin(cacheDir string) (string, []string) {
	paths := memoryPluginPaths(cacheDir)
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			return p, paths
		}
	}
	return "", paths
}

// MemoryPluginError is returned by Boot when the plugin a boot asks for
// cannot be loaded.
type MemoryPluginError struct {
	Path string
	Err  error
}

func (e *MemoryPluginError) Error() string {
	return fmt.Sprintf("memory plugin %s: %v (build it with scripts/setup, or leave the memory pass out)", e.Path, e.Err)
}

func (e *MemoryPluginError) Unwrap() error { return e.Err }

// checkMemoryPlugin checks that the plugin a boot names exists, and
// leaves it out of a boot that is not under icount, whose guest is not
// deterministic (the guest then says the pass is not offered).
func (c *Config) checkMemoryPlugin() error {
	if c.Accel != wire.AccelIcount {
		c.MemoryPlugin = ""
	}
	if c.MemoryPlugin == "" {
		return nil
	}
	if _, err := os.Stat(c.MemoryPlugin); err != nil {
		return &MemoryPluginError{c.MemoryPlugin, err}
	}
	return nil
}

// memoryRTC starts the guest's real-time clock at a fixed date and runs it
// on the virtual clock in the boot that loads the plugin. The RTC is the
// one input of the guest's random seed that icount does not fix (the TSC
// is the instruction count, Westmere has no RDRAND): with it the boot's
// random numbers repeat — the random keys of the benchmarks, KASLR, the
// slab freelists' order — and so do the physical addresses of the
// trie's nodes, which decide the cache sets they fall in. Without it two
// boots of one image differed by 8 % in L1D misses per random lookup
// (Debian 6.12, 1000 entries: 2.080 and 2.245).
const memoryRTC = "base=2024-01-01T00:00:00,clock=vm"

// memoryCodeCacheMiB is QEMU's code cache (the TCG accelerator's tb-size,
// in MiB) in a boot that loads the plugin; by default it is an eighth of
// the guest's memory (64 MiB for 512). A full cache is flushed, and a
// flush while the plugin's memory callbacks are in place can abort QEMU
// 7.2 (memplugin/memcount.c, DISARM): the blocks translated with
// callbacks are several times larger, so the cache is made big enough
// never to fill in a boot. QEMU maps it lazily: what is never used costs
// no memory.
const memoryCodeCacheMiB = 1024

// codeCacheMiB is the code cache a boot asks QEMU for: memoryCodeCacheMiB
// with the plugin, else QEMU's default (0).
func (c *Config) codeCacheMiB() int {
	if c.MemoryPlugin == "" {
		return 0
	}
	return memoryCodeCacheMiB
}

// pluginArgs are QEMU's -plugin arguments for the memory plugin: the
// outfile, and the core the boot's CPU profile has (memoryCore), with its
// cycle model unless Config.NoCycleModel.
func (c *Config) pluginArgs(runDir string) []string {
	if c.MemoryPlugin == "" {
		return nil
	}
	args := append([]string{c.MemoryPlugin, "outfile=" + filepath.Join(runDir, memcountFile)}, c.memoryCore().PluginArgs(!c.NoCycleModel)...)
	return []string{"-plugin", strings.Join(args, ","), "-rtc", memoryRTC}
}

// memoryCore is the core the plugin models in this boot: its CPU
// profile's (every profile has one: TestCoreModelPerProfile).
func (c *Config) memoryCore() CoreModel {
	core, _ := CoreModelOf(c.CPU.Name)
	return core
}

// MemCounts is what the plugin wrote in one boot.
type MemCounts struct {
	// Version is the plugin's format: 1 wrote the caches' counts alone,
	// 2 adds the exact profile (MemSegment.Execs, Calls, Flow, Special),
	// 3 the branch model, the L2, the locked and serialising instructions
	// (MemSegment.Events) and the wide segments (MemSegment.Outside).
	Version int
	// Model is the plugin's first line: the sizes it modelled; Core the
	// core they are of (CoreModel.Name; "" for a plugin that did not
	// say: the default model).
	Model    string
	Core     string
	Segments []MemSegment
	// Marks are the marks the plugin saw executed, by code
	// (wire.MemWindowStart is 1 … wire.MemDisarm 6), from its last line;
	// Complete is false when that line is missing (QEMU killed).
	Marks    [6]uint64
	Complete bool
	// ArmedWall and ArmedCPU are the host time QEMU spent with the
	// plugin instrumenting (from the guest's MemArm to its MemDisarm):
	// wall time, and CPU time of the vCPU thread.
	ArmedWall, ArmedCPU time.Duration
}

// MemSegment is one segment the guest opened and closed: the counts of
// its windows.
type MemSegment struct {
	Number  int
	Windows uint64 // counting windows (marked bpf_loop calls)
	Insns   uint64 // instructions executed inside them
	L1D     CacheCount
	L1I     CacheCount
	LLC     CacheCount
	DTLB    CacheCount
	// PCs are the instructions with the most misses (L1D + LLC + dTLB),
	// most first, by virtual address.
	PCs []MemPC
	// The exact profile (plugin version 2; nil and zero before): Execs
	// are the executions of every instruction executed inside the
	// windows, by virtual address (PCOverflow: all those the plugin had
	// no room for); Calls the calls executed, by call site and target;
	// Flow the control transfers by kind; Special the executions of the
	// mitigations' instructions by name ("verw", "lfence", "wrmsr").
	Execs   []PCCount
	Calls   []CallSite
	Flow    *FlowCounts
	Special map[string]uint64
	// L2 is the L2's count when the core has one modelled (nil: none);
	// Events the branches, their mispredictions and the locked and
	// serialising instructions of the windows (plugin version 3).
	L2     *CacheCount
	Events *Events
	// Outside is what the kernel ran outside the windows in a wide
	// segment (wire.MemBeginWide; nil in others), and DExecs its
	// instructions' executions, by address.
	Outside *Outside
	DExecs  []PCCount
}

// Events are a bank's branches by kind with their mispredictions, when
// the plugin modelled branches (Branches), and its locked and serialising
// instructions.
type Events struct {
	Branches                     bool
	Cond, CondMiss, Ind, IndMiss uint64
	Ret, RetMiss                 uint64
	Lock, Serial                 uint64
}

// Outside is the kernel's execution outside a wide segment's windows.
type Outside struct {
	Insns               uint64
	L1D, L1I, LLC, DTLB CacheCount
	L2                  *CacheCount
	Events              *Events
}

// PCCount is the executions of one instruction.
type PCCount struct{ PC, Count uint64 }

// CallSite is the executions of the call instructions at Site that went
// to Target (a direct call's target, an indirect call's successor).
// Site and Target are PCOverflow for the calls the plugin had no room
// for.
type CallSite struct{ Site, Target, Count uint64 }

// FlowCounts are a segment's control transfers, by the kind of the
// instruction that ends each block (memplugin/memcount.c, decode_flow):
// Taken of the Jcc went to their target; Diverted went neither to the
// fall-through nor to the direct target (an interrupt or exception came
// between the two blocks); Rep are the iterations of rep string
// instructions (QEMU runs each as a block); None are blocks that end
// without a branch.
type FlowCounts struct {
	Call         uint64 `json:"call"`
	IndirectCall uint64 `json:"indirect_call"`
	Ret          uint64 `json:"ret"`
	Jmp          uint64 `json:"jmp"`
	IndirectJmp  uint64 `json:"indirect_jmp"`
	Jcc          uint64 `json:"jcc"`
	Taken        uint64 `json:"taken"`
	Other        uint64 `json:"other"`
	Rep          uint64 `json:"rep"`
	None         uint64 `json:"none"`
	Diverted     uint64 `json:"diverted"`
}

// CacheCount is one cache's accesses and misses.
type CacheCount struct{ Accesses, Misses uint64 }

// PCOverflow is the PC of the plugin's line for every instruction that
// found no room in its table (it keeps 262144): those are not attributed.
const PCOverflow = 1<<64 - 1

// maxSpecials bounds the names of a special line.
const maxSpecials = 16

// MemPC is the data accesses and misses of one instruction.
type MemPC struct{ PC, Accesses, L1D, LLC, DTLB uint64 }

// Segment returns segment n (from 1), or nil.
func (m *MemCounts) Segment(n int) *MemSegment {
	for i := range m.Segments {
		if m.Segments[i].Number == n {
			return &m.Segments[i]
		}
	}
	return nil
}

// readMemCounts reads a plugin's file, bounded.
func readMemCounts(path string) (*MemCounts, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read memory plugin output: %w", err)
	}
	defer f.Close()
	m, err := parseMemCounts(io.LimitReader(f, maxMemcountBytes))
	if err != nil {
		return nil, fmt.Errorf("read memory plugin output %s: %w", path, err)
	}
	return m, nil
}

// eventsLine reads an events or oevents line: the segment's number, then
// names and counts (cond, cond_miss, ind, ind_miss, ret, ret_miss with a
// branch model; lock and serial always). An oevents line belongs to a
// segment with an outside line.
func eventsLine(m *MemCounts, f []string, n int) (*MemSegment, *Events, error) {
	seg, err := strconv.Atoi(f[1%len(f)])
	s := m.Segment(seg)
	switch {
	case err != nil || s == nil || len(f)%2 != 0 || len(f) > 2+2*maxEventNames:
		return nil, nil, fmt.Errorf("line %d: %s line, malformed or of an unknown segment", n, f[0])
	case f[0] == "events" && s.Events != nil, f[0] == "oevents" && (s.Outside == nil || s.Outside.Events != nil):
		return nil, nil, fmt.Errorf("line %d: %s line repeated, or without its outside line", n, f[0])
	}
	ev := &Events{}
	fields := map[string]*uint64{"cond": &ev.Cond, "cond_miss": &ev.CondMiss, "ind": &ev.Ind, "ind_miss": &ev.IndMiss,
		"ret": &ev.Ret, "ret_miss": &ev.RetMiss, "lock": &ev.Lock, "serial": &ev.Serial}
	for i := 2; i < len(f); i += 2 {
		p, ok := fields[f[i]]
		if !ok {
			continue // a name of a later plugin
		}
		if *p, err = strconv.ParseUint(f[i+1], 10, 64); err != nil {
			return nil, nil, fmt.Errorf("line %d: %w", n, err)
		}
		ev.Branches = ev.Branches || f[i] == "cond"
	}
	return s, ev, nil
}

// maxEventNames bounds the names of an events line.
const maxEventNames = 32

func parseMemCounts(r io.Reader) (*MemCounts, error) {
	m := &MemCounts{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		nums := func(from int, want int) ([]uint64, error) {
			if len(f) < from+want {
				return nil, fmt.Errorf("line %d: %d fields, want %d", n, len(f), from+want)
			}
			out := make([]uint64, 0, want)
			for _, s := range f[from : from+want] {
				base := 10
				if (f[0] == "pc" || f[0] == "exec" || f[0] == "dexec") && len(out) == 1 || f[0] == "call" && (len(out) == 1 || len(out) == 2) {
					base = 16
				}
				v, err := strconv.ParseUint(s, base, 64)
				if err != nil {
					return nil, fmt.Errorf("line %d: %w", n, err)
				}
				out = append(out, v)
			}
			return out, nil
		}
		// segmentLine reads a line of want numbers after its name, the
		// first a segment's, which must exist and have room for it.
		segmentLine := func(want int, room func(*MemSegment) bool) (*MemSegment, []uint64, error) {
			v, err := nums(1, want)
			if err != nil {
				return nil, nil, err
			}
			s := m.Segment(int(v[0]))
			if s == nil || !room(s) || len(f) != 1+want {
				return nil, nil, fmt.Errorf("line %d: %s line of segment %d, unknown, full or malformed", n, f[0], v[0])
			}
			return s, v, nil
		}
		switch f[0] {
		case "memcount":
			if len(f) < 2 {
				return nil, fmt.Errorf("line %d: malformed model line", n)
			}
			v, err := strconv.Atoi(f[1])
			if err != nil || v < 1 {
				return nil, fmt.Errorf("line %d: plugin format %q", n, f[1])
			}
			m.Version, m.Model = v, strings.Join(f[2:], " ")
			for i := 2; i+1 < len(f); i++ {
				if f[i] == "core" {
					m.Core = f[i+1]
				}
			}
		case "segment":
			// segment N windows W insns I l1d A M l1i A M llc A M dtlb A M [l2 A M]
			if len(f) != 18 && !(len(f) == 21 && f[18] == "l2") || f[2] != "windows" || f[4] != "insns" || f[6] != "l1d" || f[9] != "l1i" || f[12] != "llc" || f[15] != "dtlb" {
				return nil, fmt.Errorf("line %d: malformed segment line", n)
			}
			if len(m.Segments) >= maxMemcountSegments {
				return nil, fmt.Errorf("more than %d segments", maxMemcountSegments)
			}
			v := make([]uint64, 0, 11)
			for _, i := range []int{1, 3, 5, 7, 8, 10, 11, 13, 14, 16, 17} {
				x, err := strconv.ParseUint(f[i], 10, 64)
				if err != nil {
					return nil, fmt.Errorf("line %d: %w", n, err)
				}
				v = append(v, x)
			}
			seg := MemSegment{Number: int(v[0]), Windows: v[1], Insns: v[2],
				L1D: CacheCount{v[3], v[4]}, L1I: CacheCount{v[5], v[6]}, LLC: CacheCount{v[7], v[8]}, DTLB: CacheCount{v[9], v[10]}}
			if len(f) == 21 {
				l2, err := nums(19, 2)
				if err != nil {
					return nil, err
				}
				seg.L2 = &CacheCount{l2[0], l2[1]}
			}
			m.Segments = append(m.Segments, seg)
		case "events", "oevents":
			s, ev, err := eventsLine(m, f, n)
			if err != nil {
				return nil, err
			}
			if f[0] == "events" {
				s.Events = ev
			} else {
				s.Outside.Events = ev
			}
		case "outside":
			// outside N insns I l1d A M l1i A M llc A M dtlb A M [l2 A M]
			seg, err := strconv.Atoi(f[1%len(f)])
			s := m.Segment(seg)
			if err != nil || s == nil || s.Outside != nil || len(f) != 16 && !(len(f) == 19 && f[16] == "l2") ||
				f[2] != "insns" || f[4] != "l1d" || f[7] != "l1i" || f[10] != "llc" || f[13] != "dtlb" {
				return nil, fmt.Errorf("line %d: outside line, malformed, of an unknown segment, or repeated", n)
			}
			v := make([]uint64, 0, 9)
			for _, i := range []int{3, 5, 6, 8, 9, 11, 12, 14, 15} {
				x, err := strconv.ParseUint(f[i], 10, 64)
				if err != nil {
					return nil, fmt.Errorf("line %d: %w", n, err)
				}
				v = append(v, x)
			}
			s.Outside = &Outside{Insns: v[0], L1D: CacheCount{v[1], v[2]}, L1I: CacheCount{v[3], v[4]}, LLC: CacheCount{v[5], v[6]}, DTLB: CacheCount{v[7], v[8]}}
			if len(f) == 19 {
				l2, err := nums(17, 2)
				if err != nil {
					return nil, err
				}
				s.Outside.L2 = &CacheCount{l2[0], l2[1]}
			}
		case "dexec":
			s, v, err := segmentLine(3, func(s *MemSegment) bool { return s.Outside != nil && len(s.DExecs) < maxMemcountExecs })
			if err != nil {
				return nil, err
			}
			s.DExecs = append(s.DExecs, PCCount{PC: v[1], Count: v[2]})
		case "pc":
			s, v, err := segmentLine(6, func(s *MemSegment) bool { return len(s.PCs) < maxMemcountPCs })
			if err != nil {
				return nil, err
			}
			s.PCs = append(s.PCs, MemPC{PC: v[1], Accesses: v[2], L1D: v[3], LLC: v[4], DTLB: v[5]})
		case "exec":
			s, v, err := segmentLine(3, func(s *MemSegment) bool { return len(s.Execs) < maxMemcountExecs })
			if err != nil {
				return nil, err
			}
			s.Execs = append(s.Execs, PCCount{PC: v[1], Count: v[2]})
		case "call":
			s, v, err := segmentLine(4, func(s *MemSegment) bool { return len(s.Calls) < maxMemcountCalls })
			if err != nil {
				return nil, err
			}
			s.Calls = append(s.Calls, CallSite{Site: v[1], Target: v[2], Count: v[3]})
		case "flow":
			// flow N call C icall C ret C jmp C ijmp C jcc C taken C other C rep C none C diverted C
			names := []string{"call", "icall", "ret", "jmp", "ijmp", "jcc", "taken", "other", "rep", "none", "diverted"}
			if len(f) != 2+2*len(names) {
				return nil, fmt.Errorf("line %d: malformed flow line", n)
			}
			seg, err := strconv.Atoi(f[1])
			s := m.Segment(seg)
			if err != nil || s == nil || s.Flow != nil {
				return nil, fmt.Errorf("line %d: flow line of segment %s, unknown or repeated", n, f[1])
			}
			v := make([]uint64, len(names))
			for i, name := range names {
				if f[2+2*i] != name {
					return nil, fmt.Errorf("line %d: malformed flow line", n)
				}
				if v[i], err = strconv.ParseUint(f[3+2*i], 10, 64); err != nil {
					return nil, fmt.Errorf("line %d: %w", n, err)
				}
			}
			s.Flow = &FlowCounts{Call: v[0], IndirectCall: v[1], Ret: v[2], Jmp: v[3], IndirectJmp: v[4], Jcc: v[5], Taken: v[6], Other: v[7], Rep: v[8], None: v[9], Diverted: v[10]}
		case "special":
			// special N NAME C NAME C …
			seg, err := strconv.Atoi(f[1%len(f)])
			s := m.Segment(seg)
			if err != nil || s == nil || s.Special != nil || len(f)%2 != 0 || len(f) > 2+2*maxSpecials {
				return nil, fmt.Errorf("line %d: special line, malformed, of an unknown segment, or repeated", n)
			}
			s.Special = map[string]uint64{}
			for i := 2; i < len(f); i += 2 {
				c, err := strconv.ParseUint(f[i+1], 10, 64)
				if err != nil {
					return nil, fmt.Errorf("line %d: %w", n, err)
				}
				s.Special[f[i]] = c
			}
		case "end":
			if len(f) != 13 || f[1] != "segments" || f[3] != "marks" || f[10] != "armed_ns" {
				return nil, fmt.Errorf("line %d: malformed end line", n)
			}
			v, err := nums(4, 6)
			if err != nil {
				return nil, err
			}
			copy(m.Marks[:], v)
			t, err := nums(11, 2)
			if err != nil {
				return nil, err
			}
			m.ArmedWall, m.ArmedCPU = time.Duration(t[0]), time.Duration(t[1])
			m.Complete = true
		default:
			return nil, fmt.Errorf("line %d: unknown record %q", n, f[0])
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if m.Model == "" {
		return nil, errors.New("no model line (not the memory plugin's output?)")
	}
	return m, nil
}
