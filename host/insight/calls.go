package insight

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/arch/x86/x86asm"
)

// ErrFunctionNotFound means a function of interest is not in the symbol
// table: inlined into every caller, renamed, or not built.
var ErrFunctionNotFound = errors.New("function not found")

// Call is a function that a function of interest calls directly.
type Call struct {
	// Callee is the symbol name as the source spells it
	// ("longest_prefix_match.isra.0").
	Callee string `json:"callee"`
	// Sites counts the call instructions and tail-call jumps to it.
	Sites int `json:"sites"`
	// Tail is set when at least one site is a jump (a tail call).
	Tail bool `json:"tail,omitempty"`
}

// FunctionCalls is what disassembling one function found.
type FunctionCalls struct {
	Function string `json:"function"`
	Addr     uint64 `json:"addr"`
	// Size is the function's size from the symbol source (approximate for
	// kallsyms), without its .cold part.
	Size uint64 `json:"size"`
	// Parts are the symbols disassembled: the function and any .cold
	// part its jumps lead to.
	Parts []string `json:"parts"`
	// Calls are its direct callees, by name; plumbing (see isPlumbing) is
	// left out.
	Calls []Call `json:"calls"`
	// Indirect counts indirect calls and jumps out of the function
	// (through a register or memory, or a retpoline thunk).
	Indirect int `json:"indirect,omitempty"`
	// Undecoded counts bytes the disassembler could not decode (skipped
	// one at a time); nonzero means the lists may be incomplete.
	Undecoded int `json:"undecoded,omitempty"`
	// Error says why the function could not be disassembled; the other
	// fields are then empty.
	Error string `json:"error,omitempty"`
}

// callsByName returns the callees of fc by normalised name, the sites of
// clones that normalise alike added up (the first clone names the entry).
func (fc *FunctionCalls) callsByName() map[string]Call {
	m := make(map[string]Call, len(fc.Calls))
	for _, c := range fc.Calls {
		n := normalizeName(c.Callee)
		prev, ok := m[n]
		if ok {
			c.Callee = prev.Callee
		}
		c.Sites += prev.Sites
		c.Tail = c.Tail || prev.Tail
		m[n] = c
	}
	return m
}

// buildPlumbing names what the kernel build puts between a function and
// its callees besides the mitigations' thunks (thunkOf): the ftrace hook,
// static-call trampolines, and the helpers thunks go through
// (__x86_return_skl of call depth tracking, srso_safe_ret of SRSO's Safe
// RET). They are not callees in the sense of the source code.
var buildPlumbing = []string{"__fentry__", "__SCT__", "__x86_return_skl", "srso_safe_ret"}

// thunkOf says whether a call or jump to name goes through a mitigation's
// thunk rather than to a callee: a return thunk, a return untraining or an
// indirect-branch thunk (retpoline) of mitigationSymbols, each name taken
// as a prefix; kind says which.
func thunkOf(name string) (kind MitigationKind, ok bool) {
	for _, m := range mitigationSymbols {
		switch m.kind {
		case ReturnThunks, Untrains, IndirectThunks:
			if strings.HasPrefix(name, m.name) {
				return m.kind, true
			}
		}
	}
	return "", false
}

// isIndirectThunk reports whether name is a thunk an indirect call or
// jump goes through (__x86_indirect_thunk_* and the like).
func isIndirectThunk(name string) bool {
	kind, ok := thunkOf(name)
	return ok && kind == IndirectThunks
}

// isPlumbing reports whether a call to name is build plumbing rather than
// a callee: __fentry__, static-call trampolines (__SCT__*), and the
// mitigations' thunks (thunkOf: __x86_return_thunk and the other return
// thunks, the return untrainings, and retpolines,
// __x86_indirect_thunk_*, which findCalls counts as indirect calls).
func isPlumbing(name string) bool {
	_, thunk := thunkOf(name)
	return thunk || hasAnyPrefix(name, buildPlumbing)
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// coldSuffix ends the name GCC gives the unlikely part of a function that
// it moved to .text.unlikely ("trie_update_elem.cold").
const coldSuffix = ".cold"

// findCalls disassembles function in im and lists the functions it calls
// directly, resolving targets through syms (whose addresses must be link
// addresses, as ParseKallsyms makes them). The function's extent is its
// symbol's size (for kallsyms: up to the next symbol). Calls and
// tail-call jumps (a jump to the start of another function) count;
// jumps into a .cold part of the function are followed and its calls
// counted as the function's own.
//
// A function that the table has several times (statics of one name in
// several files) is read at its first address.
func findCalls(im *Image, syms *Symbols, function string) (*FunctionCalls, error) {
	sym, err := functionSymbol(syms, function)
	if err != nil {
		return nil, err
	}
	fc := &FunctionCalls{Function: function, Addr: sym.Addr, Size: sym.Size}
	calls := map[string]*Call{}
	queue := []Symbol{sym}
	seen := map[uint64]bool{sym.Addr: true}
	var parts []Symbol
	for len(queue) > 0 {
		part := queue[0]
		queue = queue[1:]
		parts = append(parts, part)
		fc.Parts = append(fc.Parts, part.Name)
		code, err := im.Code(part.Addr, part.Size)
		if err != nil {
			return nil, fmt.Errorf("disassemble %s: %w", part.Name, err)
		}
		for pc := 0; pc < len(code); {
			if isEndbr(code[pc:]) {
				pc += len(endbr64)
				continue
			}
			inst, err := x86asm.Decode(code[pc:], 64)
			if err != nil || inst.Len == 0 || inst.Op == 0 {
				fc.Undecoded++
				pc++
				continue
			}
			here := part.Addr + uint64(pc)
			pc += inst.Len
			switch inst.Op {
			case x86asm.CALL, x86asm.JMP:
			default:
				if !isCondJump(inst.Op) {
					continue
				}
			}
			rel, ok := inst.Args[0].(x86asm.Rel)
			if !ok {
				if inst.Op == x86asm.CALL || inst.Op == x86asm.JMP {
					fc.Indirect++
				}
				continue
			}
			target := here + uint64(inst.Len) + uint64(int64(rel))
			if inside(parts, target) || inside(queue, target) {
				continue // a branch within the function
			}
			callee, ok := syms.At(target)
			if !ok {
				continue // into no known symbol: nothing to name
			}
			isCall := inst.Op == x86asm.CALL
			switch {
			case isIndirectThunk(callee.Name):
				fc.Indirect++
			case isPlumbing(callee.Name):
			case isColdPartOf(callee.Name, sym.Name):
				if !seen[callee.Addr] {
					seen[callee.Addr] = true
					queue = append(queue, callee)
				}
			case target == callee.Addr && callee.IsFunc():
				c := calls[callee.Name]
				if c == nil {
					c = &Call{Callee: callee.Name}
					calls[callee.Name] = c
				}
				c.Sites++
				c.Tail = c.Tail || !isCall
			case isCall:
				// A call into the middle of a symbol: an alternative's
				// local label, or a symbol source missing a name.
				name := fmt.Sprintf("%s+%#x", callee.Name, target-callee.Addr)
				c := calls[name]
				if c == nil {
					c = &Call{Callee: name}
					calls[name] = c
				}
				c.Sites++
			}
		}
	}
	for _, c := range calls {
		fc.Calls = append(fc.Calls, *c)
	}
	slices.SortFunc(fc.Calls, func(a, b Call) int { return cmp.Compare(a.Callee, b.Callee) })
	return fc, nil
}

// functionSymbol finds the code symbol of a function of interest.
func functionSymbol(syms *Symbols, function string) (Symbol, error) {
	for _, s := range syms.Lookup(function) {
		if s.IsFunc() && s.Size > 0 {
			return s, nil
		}
	}
	return Symbol{}, fmt.Errorf("%w: %s is not a function in the %s symbols (inlined into its callers, or not built)", ErrFunctionNotFound, function, syms.Kind)
}

// isColdPartOf reports whether name is the .cold part of function, or of
// a clone of it ("f.isra.0.cold", "f.cold.12" with older GCC).
func isColdPartOf(name, function string) bool {
	base, _, _ := strings.Cut(function, ".")
	if !strings.HasPrefix(name, base+".") {
		return false
	}
	n := normalizeName(name)
	return strings.HasSuffix(n, coldSuffix)
}

func inside(parts []Symbol, addr uint64) bool {
	for _, p := range parts {
		if addr >= p.Addr && addr-p.Addr < p.Size {
			return true
		}
	}
	return false
}

// endbr64 starts every function that an indirect branch may reach with
// CONFIG_X86_KERNEL_IBT (Debian 6.12); x86asm does not know it.
var endbr64 = []byte{0xf3, 0x0f, 0x1e, 0xfa}

func isEndbr(code []byte) bool {
	return len(code) >= len(endbr64) && string(code[:len(endbr64)]) == string(endbr64)
}

func isCondJump(op x86asm.Op) bool {
	switch op {
	case x86asm.JA, x86asm.JAE, x86asm.JB, x86asm.JBE, x86asm.JE, x86asm.JG, x86asm.JGE,
		x86asm.JL, x86asm.JLE, x86asm.JNE, x86asm.JNO, x86asm.JNP, x86asm.JNS, x86asm.JO,
		x86asm.JP, x86asm.JS, x86asm.JCXZ, x86asm.JECXZ, x86asm.JRCXZ:
		return true
	}
	return false
}
