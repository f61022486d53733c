package insight

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/lpmbisect/lpmbisect/host/kernel"
	"github.com/lpmbisect/lpmbisect/wire"
)

// defaultCounted are functions the guest's insight pass counts besides the
// functions of interest and the callees a static source shows before the
// boots: the out-of-line helper of the LPM trie, whose calls per lookup
// are the trie's depth where the lookup does not inline it (1a4a0cb7985f,
// Linux 6.10). With only kallsyms, the callees are known only after the
// boot that reads them, too late for that boot's counting pass.
var defaultCounted = []string{"longest_prefix_match"}

// CountTargets returns the functions for the guest to count
// (wire.Plan.Count): the functions of interest, defaultCounted and those
// direct callees the sides' static sources show that are code under test
// (defaultSymbols), by base name ("longest_prefix_match.isra.0" counts as
// longest_prefix_match), at most wire.MaxCount of them in
// wire.MaxCountLen bytes.
//
// Callees outside the code under test are not counted, whatever
// Options.Symbols says: a kprobe on what the kernel's own printing and
// probing use (_raw_spin_lock_irqsave, __memcpy) livelocked Debian 6.1
// under icount.
func CountTargets(opts Options, sides ...*Side) []string {
	var out []string
	n := 0
	add := func(name string) {
		base, _, _ := strings.Cut(name, ".")
		if base == "" || slices.Contains(out, base) || len(out) == wire.MaxCount || n+len(base)+1 > wire.MaxCountLen+1 || isPlumbing(base) {
			return
		}
		out = append(out, base)
		n += len(base) + 1
	}
	for _, f := range opts.functions() {
		add(f)
	}
	for _, f := range defaultCounted {
		add(f)
	}
	for _, s := range sides {
		if s == nil {
			continue
		}
		for _, fc := range s.Calls {
			for _, c := range fc.Calls {
				if codeUnderTest.MatchString(normalizeName(c.Callee)) {
					add(c.Callee)
				}
			}
		}
	}
	return out
}

var codeUnderTest = regexp.MustCompile(defaultSymbols)

// ProgramChange compares one benchmark program in A and B.
type ProgramChange struct {
	Benchmark string `json:"benchmark"`
	Program   string `json:"program"`
	// A and B are the programs as each kernel loaded them; nil when a
	// side did not report it.
	A *wire.ProgramInfo `json:"a"`
	B *wire.ProgramInfo `json:"b"`
	// SameJIT is set when both JITed codes have one hash.
	SameJIT bool `json:"same_jit"`
	// Line says it in one sentence.
	Line string `json:"line"`
}

// CountRow is the calls per operation of one function in one benchmark,
// in A and B.
type CountRow struct {
	Benchmark string `json:"benchmark"`
	Function  string `json:"function"`
	// A and B are the counts of each symbol matching Function; empty on a
	// side that did not count it.
	A []wire.CallCount `json:"a"`
	B []wire.CallCount `json:"b"`
	// Line says it in one sentence: "longest_prefix_match calls per
	// lookup: 10.00 → 0 (kprobe)".
	Line string `json:"line"`
}

// pairs gathers the items of a and b under their keys, the keys in the
// order they first appear (a's, then b's new ones).
type pairs[K comparable, T any] struct {
	keys []K
	a, b map[K][]T
}

func pairUp[K comparable, T any](a, b []T, key func(T) K) pairs[K, T] {
	p := pairs[K, T]{a: map[K][]T{}, b: map[K][]T{}}
	seen := map[K]bool{}
	for side, items := range [][]T{a, b} {
		for _, it := range items {
			k := key(it)
			if !seen[k] {
				seen[k] = true
				p.keys = append(p.keys, k)
			}
			if side == 0 {
				p.a[k] = append(p.a[k], it)
			} else {
				p.b[k] = append(p.b[k], it)
			}
		}
	}
	return p
}

// comparePrograms pairs the programs of a and b by benchmark and name (the
// last of each name on a side).
func comparePrograms(a, b []wire.ProgramInfo) []ProgramChange {
	type key struct{ bench, prog string }
	p := pairUp(a, b, func(pi wire.ProgramInfo) key { return key{pi.Benchmark, pi.Program} })
	last := func(ps []wire.ProgramInfo) *wire.ProgramInfo {
		if len(ps) == 0 {
			return nil
		}
		return &ps[len(ps)-1]
	}
	var out []ProgramChange
	for _, k := range p.keys {
		c := ProgramChange{Benchmark: k.bench, Program: k.prog, A: last(p.a[k]), B: last(p.b[k])}
		c.SameJIT = c.A != nil && c.B != nil && c.A.JitedSHA256 != "" && c.A.JitedSHA256 == c.B.JitedSHA256
		c.Line = programLine(&c)
		out = append(out, c)
	}
	return out
}

func programLine(c *ProgramChange) string {
	side := func(p *wire.ProgramInfo) string {
		if p == nil {
			return "-"
		}
		if p.Problem != "" && p.TranslatedBytes == 0 {
			return "unknown (" + p.Problem + ")"
		}
		s := fmt.Sprintf("%d xlated, %d JITed bytes", p.TranslatedBytes, p.JitedBytes)
		if p.VerifiedInsns > 0 {
			s += fmt.Sprintf(", %d verified insns", p.VerifiedInsns)
		}
		return s
	}
	jit := ""
	switch {
	case c.SameJIT:
		jit = "; same JITed code"
	case c.A != nil && c.B != nil && c.A.JitedSHA256 != "" && c.B.JitedSHA256 != "":
		jit = "; JITed code differs"
	}
	return fmt.Sprintf("%s %s: %s → %s%s", c.Benchmark, c.Program, side(c.A), side(c.B), jit)
}

// compareCounts pairs the counts of a and b by benchmark and function.
func compareCounts(a, b []wire.CallCount) []CountRow {
	type key struct{ bench, fn string }
	p := pairUp(a, b, func(c wire.CallCount) key { return key{c.Benchmark, c.Function} })
	var out []CountRow
	for _, k := range p.keys {
		r := CountRow{Benchmark: k.bench, Function: k.fn, A: p.a[k], B: p.b[k]}
		r.Line = countLine(&r)
		out = append(out, r)
	}
	return out
}

// countSide says the calls per operation of one side: the sum over the
// symbols counted, with their mechanisms, or why nothing was counted.
func countSide(cs []wire.CallCount) string {
	if len(cs) == 0 {
		return "not counted"
	}
	var calls, ops uint64
	var mechs, whys []string
	counted := false
	for _, c := range cs {
		if c.Mechanism == "" {
			if !slices.Contains(whys, c.Why) {
				whys = append(whys, c.Why)
			}
			continue
		}
		counted = true
		calls += c.Calls
		ops = max(ops, c.Ops)
		m := c.Mechanism
		if c.Symbol != c.Function {
			m += " " + c.Symbol
		}
		mechs = append(mechs, m)
	}
	if !counted {
		return "not counted: " + strings.Join(whys, "; ")
	}
	per := "0"
	if ops > 0 && calls > 0 {
		per = fmt.Sprintf("%.2f", float64(calls)/float64(ops))
	}
	return fmt.Sprintf("%s (%s)", per, strings.Join(mechs, ", "))
}

// countLine says a row, per the unit of its counts ("op", or what the
// guest named, e.g. "lookup").
func countLine(r *CountRow) string {
	unit := "op"
	for _, c := range append(slices.Clone(r.A), r.B...) {
		if c.Unit != "" {
			unit = c.Unit
		}
	}
	return fmt.Sprintf("%s: %s calls per %s: %s → %s", r.Benchmark, r.Function, unit, countSide(r.A), countSide(r.B))
}

// LoadKernel is Load of a kernel input (anything kernel.Resolve takes:
// an image, a .deb, a build directory) with the static source it brings,
// its build's vmlinux (kernel.BuildVmlinux). An input that does not resolve gives
// a side that says so.
func LoadKernel(input, cacheDir string, opts Options) *Side {
	k, err := kernel.Resolve(input, cacheDir)
	if err != nil {
		return &Side{Err: err, Status: "no symbols: " + oneLine(err)}
	}
	return Load(Input{Image: k.Image, Vmlinux: kernel.BuildVmlinux(k.Image)}, opts)
}
