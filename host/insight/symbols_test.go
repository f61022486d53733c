package insight

import (
	"bufio"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/testbed/testkernels"
)

func readTestKallsyms(t *testing.T, pkg string) *Symbols {
	t.Helper()
	s, err := ReadKallsyms(filepath.Join("testdata", kallsymsFiles[pkg]), kallsymsOptions{LinkText: x86TextAddr})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func onlySymbol(t *testing.T, s *Symbols, name string) Symbol {
	t.Helper()
	syms := s.Lookup(name)
	if len(syms) != 1 {
		t.Fatalf("Lookup(%q) = %v; want one symbol", name, syms)
	}
	return syms[0]
}

// TestParseKallsymsCaptured reads the excerpts captured from the Debian
// kernels (testdata/README.md): KASLR offset, link addresses, sizes by
// next-address distance, __pfx_ padding as a boundary.
func TestParseKallsymsCaptured(t *testing.T) {
	for _, tc := range []struct {
		pkg          string
		offset       uint64
		lookup       Symbol
		pfx          int
		approxLookup uint64
	}{
		{testkernels.Debian61, 0x3200000, Symbol{Name: "trie_lookup_elem", Addr: 0xffffffff81229c10, Size: 192, Type: 't'}, 0, 192},
		{testkernels.Debian612, 0xa000000, Symbol{Name: "trie_lookup_elem", Addr: 0xffffffff812cc3d0, Size: 544, Type: 't'}, 41, 544},
	} {
		s := readTestKallsyms(t, tc.pkg)
		if s.Kind != SourceKallsyms || s.ExactSizes || s.Describe() != "kallsyms (approximate sizes)" {
			t.Errorf("%s: source %q, exact %v; want kallsyms, approximate", tc.pkg, s.Describe(), s.ExactSizes)
		}
		if s.KASLROffset != tc.offset {
			t.Errorf("%s: KASLR offset %#x; want %#x", tc.pkg, s.KASLROffset, tc.offset)
		}
		if got := onlySymbol(t, s, "trie_lookup_elem"); got != tc.lookup {
			t.Errorf("%s: trie_lookup_elem = %+v; want %+v", tc.pkg, got, tc.lookup)
		}
		if text := onlySymbol(t, s, "_text"); text.Addr != x86TextAddr {
			t.Errorf("%s: _text at %#x; want %#x", tc.pkg, text.Addr, uint64(x86TextAddr))
		}
		// Per-CPU symbols are absolute: not moved, no size.
		if cpu := onlySymbol(t, s, "cpu_tss_rw"); cpu.Addr != 0x6000 || cpu.Size != 0 || cpu.Type != 'A' {
			t.Errorf("%s: cpu_tss_rw = %+v; want absolute at 0x6000, size 0", tc.pkg, cpu)
		}
		pfx := 0
		for _, sym := range s.All() {
			if fn, ok := strings.CutPrefix(sym.Name, paddingPrefix); ok {
				pfx++
				// The padding ends where its function starts (when the
				// excerpt kept the function).
				if len(s.Lookup(fn)) > 0 && sym.Size != 16 {
					t.Errorf("%s: %s has size %d; want 16", tc.pkg, sym.Name, sym.Size)
				}
			}
		}
		if pfx != tc.pfx {
			t.Errorf("%s: %d __pfx_ symbols; want %d", tc.pkg, pfx, tc.pfx)
		}
		// At prefers the function to its padding and aliases.
		if got, ok := s.At(tc.lookup.Addr + 5); !ok || got.Name != "trie_lookup_elem" {
			t.Errorf("%s: At(trie_lookup_elem+5) = %+v, %v; want trie_lookup_elem", tc.pkg, got, ok)
		}
		if got, _ := s.At(onlySymbol(t, s, "__memcpy").Addr); got.Name != "__memcpy" {
			t.Errorf("%s: At(__memcpy) = %s; want __memcpy (the T, not its W alias memcpy)", tc.pkg, got.Name)
		}
	}
}

func TestParseKallsymsSynthetic(t *testing.T) {
	const text = `0000000000000000 A __per_cpu_start
ffffffff8b000000 T _text
ffffffff8b000000 T _stext
ffffffff8b000100 t __pfx_f
ffffffff8b000110 t f
ffffffff8b000150 t g
ffffffff8b000150 t g_alias
ffffffff8b000200 T _etext
ffffffffc0000000 t mod_func	[some_module]
`
	s, err := ParseKallsyms(strings.NewReader(text), kallsymsOptions{
		LinkText: 0xffffffff81000000,
		SectionEnd: func(addr uint64) uint64 {
			if addr < 0xffffffff81000200 {
				return 0xffffffff81000200
			}
			return 0
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, sym := range s.All() {
		got = append(got, fmt.Sprintf("%x %c %s %d", sym.Addr, sym.Type, sym.Name, sym.Size))
	}
	want := []string{
		"0 A __per_cpu_start 0",
		"ffffffff81000000 T _stext 256",
		"ffffffff81000000 T _text 256",
		"ffffffff81000100 t __pfx_f 16",
		"ffffffff81000110 t f 64",
		"ffffffff81000150 t g 176",
		"ffffffff81000150 t g_alias 176",
		"ffffffff81000200 T _etext 0",
	}
	if !slices.Equal(got, want) {
		t.Errorf("ParseKallsyms = \n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if s.KASLROffset != 0xa000000 {
		t.Errorf("KASLROffset = %#x; want 0xa000000", s.KASLROffset)
	}

	// Without LinkText the addresses stay as read (nokaslr, System.map).
	s, err = ParseKallsyms(strings.NewReader(text), kallsymsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if f := onlySymbol(t, s, "f"); f.Addr != 0xffffffff8b000110 || s.KASLROffset != 0 {
		t.Errorf("ParseKallsyms without LinkText: f at %#x, offset %#x; want 0xffffffff8b000110, 0", f.Addr, s.KASLROffset)
	}
}

func TestParseKallsymsRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    io.Reader
		opts kallsymsOptions
		want error
	}{
		{"empty", strings.NewReader(""), kallsymsOptions{}, ErrNoSymbols},
		{"hidden addresses", strings.NewReader("0000000000000000 T _text\n0000000000000000 t f\n"), kallsymsOptions{}, ErrAddressesHidden},
		{"no _text for the offset", strings.NewReader("ffffffff81000000 t f\n"), kallsymsOptions{LinkText: x86TextAddr}, ErrNoSymbols},
		{"long line", strings.NewReader("ffffffff81000000 t " + strings.Repeat("x", 2000) + "\n"), kallsymsOptions{}, ErrTooLarge},
		{"too many bytes", io.LimitReader(repeatReader(strings.Repeat(" ", 1000)+"\n"), maxKallsymsBytes+100), kallsymsOptions{}, ErrTooLarge},
		{"too many lines", strings.NewReader(strings.Repeat("\n", maxKallsymsLines+1)), kallsymsOptions{}, ErrTooLarge},
	} {
		if _, err := ParseKallsyms(tc.r, tc.opts); !errors.Is(err, tc.want) {
			t.Errorf("ParseKallsyms(%s) = %v; want %v", tc.name, err, tc.want)
		}
	}
	if _, err := ParseKallsyms(strings.NewReader("not kallsyms at all\n"), kallsymsOptions{}); err == nil {
		t.Errorf("ParseKallsyms(text) = nil error; want a parse error")
	}
	// A type is a letter: a byte that is not (found by FuzzParseKallsyms,
	// testdata/fuzz/FuzzParseKallsyms/fbb4776eef0ac364) would be printed
	// back as a symbol of another type, or as none.
	for _, typ := range []string{"\xfe", "\x1b", "?", "1"} {
		if _, err := ParseKallsyms(strings.NewReader("ffffffff81000000 T _text\nffffffff81000010 "+typ+" f\n"), kallsymsOptions{}); err == nil {
			t.Errorf("ParseKallsyms(type %q) = nil error; want a parse error", typ)
		}
	}
}

// repeatReader repeats line forever.
func repeatReader(line string) io.Reader {
	return readerFunc(func(p []byte) (int, error) {
		n := 0
		for n+len(line) <= len(p) {
			n += copy(p[n:], line)
		}
		if n == 0 {
			n = copy(p, line)
		}
		return n, nil
	})
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

// TestReadVmlinuxMatchesNM compares the sizes and type letters of
// readVmlinux with nm --size-sort, which bloat-o-meter reads, on a
// synthetic ELF file with the kernel's kinds of sections (a writable
// .rodata among them) and symbols (local, global, weak, objects, files).
func TestReadVmlinuxMatchesNM(t *testing.T) {
	nm, err := exec.LookPath("nm")
	if err != nil {
		t.Skip("no nm (binutils) to compare with")
	}
	path := filepath.Join(t.TempDir(), "vmlinux")
	writeTestELF(t, path, make([]byte, 256), x86TextAddr, nil, []testSym{
		{Name: "local_fn", Size: 16},
		{Name: "global_fn", Off: 16, Size: 32, Global: true},
		{Name: "weak_fn", Off: 48, Size: 8, Weak: true},
		{Name: "no_size", Off: 56},
		{Name: "file.c", Type: elf.STT_FILE},
		{Name: "init_fn", Size: 4, Section: ".init.text", Global: true},
		{Name: "ro_after_init", Size: 8, Type: elf.STT_OBJECT, Section: ".rodata"},
		{Name: "__ksymtab_f", Size: 12, Type: elf.STT_OBJECT, Section: "__ksymtab"},
		{Name: "data_obj", Size: 24, Type: elf.STT_OBJECT, Section: ".data", Global: true},
		{Name: "weak_obj", Off: 32, Size: 4, Type: elf.STT_OBJECT, Section: ".data", Weak: true},
		{Name: "bss_obj", Size: 64, Type: elf.STT_OBJECT, Section: ".bss"},
		{Name: "comment_sym", Size: 2, Type: elf.STT_OBJECT, Section: ".comment"},
	})
	s, err := readVmlinux(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, sym := range s.All() {
		if sym.Size != 0 {
			got = append(got, fmt.Sprintf("%016x %c %s", sym.Size, sym.Type, sym.Name))
		}
	}
	out, err := exec.Command(nm, "--size-sort", path).Output()
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		want = append(want, sc.Text())
	}
	slices.Sort(got)
	slices.Sort(want)
	t.Logf("nm --size-sort:\n%s", strings.Join(want, "\n"))
	if len(want) != 10 {
		t.Errorf("nm --size-sort printed %d symbols; want the 10 sized ones", len(want))
	}
	if !slices.Equal(got, want) {
		t.Errorf("ReadVmlinux:\n%s\nnm --size-sort:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestReadVmlinuxSynthetic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "vmlinux")
	writeTestELF(t, path, make([]byte, 64), x86TextAddr, []byte{1, 2, 3}, []testSym{
		{Name: "local_fn", Off: 0, Size: 16},
		{Name: "global_fn", Off: 16, Size: 32, Global: true},
		{Name: "a_file.c", Type: elf.STT_FILE},
	})
	s, err := readVmlinux(path)
	if err != nil {
		t.Fatal(err)
	}
	if s.BuildID != "010203" || !s.ExactSizes || s.Describe() != "vmlinux (exact sizes)" {
		t.Errorf("ReadVmlinux = build ID %q, %q; want 010203, vmlinux (exact sizes)", s.BuildID, s.Describe())
	}
	want := []Symbol{
		{Name: "local_fn", Addr: x86TextAddr, Size: 16, Type: 't'},
		{Name: "global_fn", Addr: x86TextAddr + 16, Size: 32, Type: 'T'},
	}
	if !slices.Equal(s.All(), want) {
		t.Errorf("ReadVmlinux symbols = %+v; want %+v (file symbols left out)", s.All(), want)
	}

	stripped := filepath.Join(dir, "stripped")
	writeTestELF(t, stripped, make([]byte, 64), x86TextAddr, nil, nil)
	if _, err := readVmlinux(stripped); !errors.Is(err, ErrNoSymbols) {
		t.Errorf("ReadVmlinux(stripped) = %v; want ErrNoSymbols", err)
	}
	if _, err := readVmlinux(filepath.Join(dir, "missing")); err == nil {
		t.Errorf("ReadVmlinux(missing file) = nil error")
	}
}

// ReadKallsyms is ParseKallsyms of a file.
func ReadKallsyms(path string, opts kallsymsOptions) (*Symbols, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read kallsyms: %w", err)
	}
	defer f.Close()
	s, err := ParseKallsyms(f, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s.Path = path
	return s, nil
}
