package insight

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/testbed/testkernels"
)

// callees formats calls as "name×sites" with "(tail)" for jumps.
func callees(fc *FunctionCalls) string {
	var parts []string
	for _, c := range fc.Calls {
		p := fmt.Sprintf("%s×%d", c.Callee, c.Sites)
		if c.Tail {
			p += "(tail)"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, " ")
}

// TestFindCallsDebian disassembles the LPM trie map operations from the
// real Debian payloads, resolving calls through the committed kallsyms
// excerpts: only 6.1's trie_lookup_elem calls longest_prefix_match.isra.0.
// The lists match objdump -d of the -dbg packages' vmlinux.
func TestFindCallsDebian(t *testing.T) {
	update := "__memcpy×3 _raw_spin_lock_irqsave×1 _raw_spin_unlock_irqrestore×4 bpf_map_kmalloc_node×3 kfree×1 kvfree_call_rcu×1 longest_prefix_match.isra.0×1"
	del := "_raw_spin_lock_irqsave×1 _raw_spin_unlock_irqrestore×5 kvfree_call_rcu×2 longest_prefix_match.isra.0×1"
	for _, tc := range []struct {
		pkg  string
		want map[string]string
	}{
		{testkernels.Debian61, map[string]string{
			"trie_lookup_elem": "longest_prefix_match.isra.0×1",
			"trie_update_elem": update,
			"trie_delete_elem": del,
		}},
		{testkernels.Debian612, map[string]string{
			"trie_lookup_elem": "",
			"trie_update_elem": update,
			"trie_delete_elem": del,
		}},
	} {
		t.Run(tc.pkg, func(t *testing.T) {
			image := debianImage(t, tc.pkg)
			im, err := openImage(image)
			if err != nil {
				t.Fatal(err)
			}
			defer im.Close()
			syms, err := ReadKallsyms(filepath.Join("testdata", kallsymsFiles[tc.pkg]), kallsymsOptions{LinkText: im.TextAddr, SectionEnd: im.SectionEnd})
			if err != nil {
				t.Fatal(err)
			}
			for fn, want := range tc.want {
				fc, err := findCalls(im, syms, fn)
				if err != nil {
					t.Errorf("FindCalls(%s) = %v", fn, err)
					continue
				}
				if got := callees(fc); got != want || fc.Undecoded != 0 || fc.Indirect != 0 {
					t.Errorf("FindCalls(%s) = %q, %d indirect, %d undecoded bytes; want %q, none, none", fn, got, fc.Indirect, fc.Undecoded, want)
				}
			}
			if _, err := findCalls(im, syms, "no_such_function"); !errors.Is(err, ErrFunctionNotFound) {
				t.Errorf("FindCalls(no_such_function) = %v; want ErrFunctionNotFound", err)
			}
		})
	}
}

// asm assembles the few x86-64 instructions the synthetic test needs.
type asm struct {
	code   []byte
	labels map[string]int
	fixups []fixup
}

type fixup struct {
	at     int // the rel32 field
	end    int // the end of the instruction
	target string
	add    int
}

func (a *asm) label(name string) { a.labels[name] = len(a.code) }

func (a *asm) bytes(b ...byte) { a.code = append(a.code, b...) }

// rel32 emits opcode bytes followed by a 32-bit displacement to
// target+add.
func (a *asm) rel32(target string, add int, opcode ...byte) {
	a.bytes(opcode...)
	a.fixups = append(a.fixups, fixup{at: len(a.code), end: len(a.code) + 4, target: target, add: add})
	a.bytes(0, 0, 0, 0)
}

func (a *asm) call(target string)            { a.rel32(target, 0, 0xe8) }
func (a *asm) jmp(target string)             { a.rel32(target, 0, 0xe9) }
func (a *asm) jne(target string)             { a.rel32(target, 0, 0x0f, 0x85) }
func (a *asm) callAt(target string, add int) { a.rel32(target, add, 0xe8) }

func (a *asm) link(t *testing.T) []byte {
	for _, f := range a.fixups {
		to, ok := a.labels[f.target]
		if !ok {
			t.Fatalf("asm: no label %s", f.target)
		}
		binary.LittleEndian.PutUint32(a.code[f.at:], uint32(int32(to+f.add-f.end)))
	}
	return a.code
}

// TestFindCallsSynthetic checks each rule on hand-assembled code: plumbing
// left out, retpolines and register calls counted as indirect, the .cold
// part followed, jumps to a function's start as tail calls, branches
// inside the function ignored.
func TestFindCallsSynthetic(t *testing.T) {
	a := &asm{labels: map[string]int{}}
	a.label("f")
	a.bytes(0xf3, 0x0f, 0x1e, 0xfa) // endbr64
	a.call("__fentry__")
	a.call("g")
	a.label("f_loop")
	a.call("g")
	a.jne("f.cold")     // into the cold part: followed
	a.jne("f_loop")     // a loop: inside f
	a.bytes(0xff, 0xd0) // call *%rax
	a.call("__x86_indirect_thunk_rax")
	a.call("__SCT__might_resched")
	a.callAt("m", 4) // into the middle of m
	a.jne("h")       // a conditional tail call
	a.jmp("__x86_return_thunk")
	a.bytes(0xcc, 0xcc)
	a.label("f_end")
	a.label("g")
	a.jmp("__x86_return_thunk")
	a.label("h")
	a.jmp("k") // a tail call, but h is not a function of interest
	a.label("k")
	a.jmp("__x86_return_thunk")
	a.label("m")
	a.bytes(0x90, 0x90, 0x90, 0x90, 0x90)
	a.jmp("__x86_return_thunk")
	a.label("f.cold")
	a.call("k")
	a.jmp("f_loop") // back into f
	a.label("f.cold_end")
	for _, name := range []string{"__fentry__", "__x86_return_thunk", "__x86_indirect_thunk_rax", "__SCT__might_resched"} {
		a.label(name)
		a.bytes(0xc3, 0xcc, 0xcc, 0xcc)
	}
	code := a.link(t)
	sym := func(name, end string) testSym {
		return testSym{Name: name, Off: uint64(a.labels[name]), Size: uint64(a.labels[end] - a.labels[name]), Global: true}
	}
	syms := []testSym{
		sym("f", "f_end"), sym("g", "h"), sym("h", "k"), sym("k", "m"), sym("m", "f.cold"),
		{Name: "f.cold", Off: uint64(a.labels["f.cold"]), Size: uint64(a.labels["f.cold_end"] - a.labels["f.cold"])},
	}
	for _, name := range []string{"__fentry__", "__x86_return_thunk", "__x86_indirect_thunk_rax", "__SCT__might_resched"} {
		syms = append(syms, testSym{Name: name, Off: uint64(a.labels[name]), Size: 4, Global: true})
	}
	path := filepath.Join(t.TempDir(), "vmlinux")
	writeTestELF(t, path, code, x86TextAddr, []byte{1}, syms)

	im, err := openImage(path)
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	s, err := readVmlinux(path)
	if err != nil {
		t.Fatal(err)
	}
	fc, err := findCalls(im, s, "f")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := callees(fc), "g×2 h×1(tail) k×1 m+0x4×1"; got != want {
		t.Errorf("FindCalls(f) callees = %q; want %q", got, want)
	}
	if !slices.Equal(fc.Parts, []string{"f", "f.cold"}) || fc.Indirect != 2 || fc.Undecoded != 0 {
		t.Errorf("FindCalls(f) = parts %v, %d indirect, %d undecoded; want [f f.cold], 2, 0", fc.Parts, fc.Indirect, fc.Undecoded)
	}
	if fc.Size != uint64(a.labels["f_end"]) {
		t.Errorf("FindCalls(f).Size = %d; want %d (without the cold part)", fc.Size, a.labels["f_end"])
	}
	if hc, err := findCalls(im, s, "h"); err != nil || callees(hc) != "k×1(tail)" {
		t.Errorf("FindCalls(h) = %v, %v; want k×1(tail)", hc, err)
	}
}

func TestIsPlumbing(t *testing.T) {
	for _, name := range []string{"__fentry__", "__x86_return_thunk", "__x86_indirect_thunk_r11", "__SCT__cond_resched", "its_return_thunk", "srso_return_thunk",
		"srso_safe_ret", "__x86_return_skl", "retbleed_untrain_ret", "call_depth_return_thunk", "__x86_indirect_its_thunk_rax"} {
		if !isPlumbing(name) {
			t.Errorf("IsPlumbing(%s) = false; want true", name)
		}
	}
	for _, name := range []string{"longest_prefix_match.isra.0", "kfree", "__memcpy", "_raw_spin_lock_irqsave", "clear_bhb_loop", "entry_ibpb"} {
		if isPlumbing(name) {
			t.Errorf("IsPlumbing(%s) = true; want false", name)
		}
	}
	for name, want := range map[string]bool{"__x86_indirect_thunk_r11": true, "__x86_indirect_call_thunk_rax": true, "__x86_return_thunk": false, "__fentry__": false} {
		if got := isIndirectThunk(name); got != want {
			t.Errorf("isIndirectThunk(%s) = %v; want %v", name, got, want)
		}
	}
}
