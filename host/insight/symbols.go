package insight

import (
	"bufio"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/lpmbisect/lpmbisect/host/kernel"
)

// SourceKind says where a side's symbols came from, best first.
type SourceKind string

const (
	// SourceVmlinux is an unstripped vmlinux (a build directory's, or one
	// given): the ELF symbol table, with the compiler's exact sizes.
	SourceVmlinux SourceKind = "vmlinux"
	// SourceDebugPackage is the vmlinux of a Debian
	// linux-image-<release>-dbg package; exact sizes, build ID checked
	// against the image.
	SourceDebugPackage SourceKind = "debug package"
	// SourceKallsyms is /proc/kallsyms captured from a guest (or a
	// System.map): addresses and types only, sizes are the distances to
	// the next symbol and so include alignment padding.
	SourceKallsyms SourceKind = "kallsyms"
)

// Errors of the symbol sources; test with errors.Is.
var (
	// ErrNoSymbols means a source holds no usable symbols: a stripped
	// vmlinux, an empty kallsyms, or a side given no source at all.
	ErrNoSymbols = errors.New("no symbols")
	// ErrAddressesHidden means kallsyms was read without the right to see
	// addresses (every address is zero: kptr_restrict, or not root).
	ErrAddressesHidden = errors.New("kallsyms addresses hidden")
	// ErrBuildIDMismatch means a debug vmlinux does not belong to the image.
	ErrBuildIDMismatch = errors.New("build ID mismatch")
	// ErrTooLarge means an untrusted input exceeds the bounds of this package.
	ErrTooLarge = errors.New("input too large")
)

// Symbol is one entry of a symbol table.
type Symbol struct {
	Name string `json:"name"`
	// Addr is the link-time address: for kallsyms, the run-time address
	// minus the KASLR offset, so that it matches the image's ELF.
	Addr uint64 `json:"addr"`
	// Size is the ELF st_size, or for kallsyms the distance to the next
	// symbol (0 for the last of a section or an absolute symbol).
	Size uint64 `json:"size"`
	// Type is the nm(1) type letter: t/T text, d/D data, b/B bss,
	// r/R read-only data, w/W and v/V weak, a/A absolute; lower case is
	// local.
	Type byte `json:"type"`
}

// IsFunc reports whether s is code (nm types t, T, w, W).
func (s Symbol) IsFunc() bool {
	switch s.Type {
	case 't', 'T', 'w', 'W':
		return true
	}
	return false
}

// Symbols is a symbol table from one source, sorted by address.
type Symbols struct {
	Kind SourceKind `json:"kind"`
	// Path is the file the symbols were read from, if any.
	Path string `json:"path,omitempty"`
	// ExactSizes is set for ELF symbol tables.
	ExactSizes bool `json:"exact_sizes"`
	// BuildID is the GNU build ID of the vmlinux ("" for kallsyms).
	BuildID string `json:"build_id,omitempty"`
	// KASLROffset is what was subtracted from kallsyms addresses: the
	// run-time _text minus the link-time .text address (0 otherwise).
	KASLROffset uint64 `json:"kaslr_offset,omitempty"`

	syms   []Symbol         // by address, then name
	byName map[string][]int // indexes into syms
}

// Describe names the source as a report says it, e.g.
// "vmlinux (exact sizes)" or "kallsyms (approximate sizes)".
func (s *Symbols) Describe() string {
	if s.ExactSizes {
		return string(s.Kind) + " (exact sizes)"
	}
	return string(s.Kind) + " (approximate sizes)"
}

// All returns the symbols, sorted by address. The slice is shared.
func (s *Symbols) All() []Symbol { return s.syms }

// Lookup returns the symbols named name (static functions of different
// files may share a name).
func (s *Symbols) Lookup(name string) []Symbol {
	var out []Symbol
	for _, i := range s.byName[name] {
		out = append(out, s.syms[i])
	}
	return out
}

// At returns the symbol an address belongs to: among those starting at the
// highest address not above addr, a real one rather than __pfx_ padding
// and a function rather than another type. ok is false below the first
// symbol or past the end of the symbol found, when its size is known.
func (s *Symbols) At(addr uint64) (sym Symbol, ok bool) {
	i, found := slices.BinarySearchFunc(s.syms, addr, func(e Symbol, a uint64) int {
		switch {
		case e.Addr < a:
			return -1
		case e.Addr > a:
			return 1
		}
		return 0
	})
	if !found {
		if i == 0 {
			return Symbol{}, false
		}
		i-- // the last symbol starting below addr
	}
	start := s.syms[i].Addr
	j := i
	for j > 0 && s.syms[j-1].Addr == start {
		j--
	}
	best := -1
	for k := j; k < len(s.syms) && s.syms[k].Addr == start; k++ {
		if best < 0 || rank(s.syms[k]) > rank(s.syms[best]) {
			best = k
		}
	}
	sym = s.syms[best]
	if sym.Size != 0 && addr >= sym.Addr+sym.Size {
		return sym, false
	}
	return sym, true
}

// rank orders symbols at one address for At.
func rank(s Symbol) int {
	r := 0
	if !strings.HasPrefix(s.Name, paddingPrefix) {
		r += 2
	}
	if s.IsFunc() {
		r++
	}
	return r
}

// paddingPrefix starts the symbols that Linux 6.2+ (CONFIG_CALL_PADDING,
// 6.12 has ~49k of them) puts on the 16 bytes of padding before each
// function, for call depth tracking and FineIBT.
const paddingPrefix = "__pfx_"

func newSymbols(kind SourceKind, syms []Symbol) *Symbols {
	slices.SortStableFunc(syms, func(a, b Symbol) int {
		if a.Addr != b.Addr {
			if a.Addr < b.Addr {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	s := &Symbols{Kind: kind, syms: syms, byName: make(map[string][]int, len(syms))}
	for i, sym := range syms {
		s.byName[sym.Name] = append(s.byName[sym.Name], i)
	}
	return s
}

// readVmlinux reads the symbol table of an unstripped vmlinux (or any ELF
// file), with the type letters that nm(1) prints and exact sizes. A file
// without a symbol table (a stripped image payload) gives ErrNoSymbols.
func readVmlinux(path string) (*Symbols, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read symbols: %w (give an unstripped vmlinux)", err)
	}
	defer f.Close()
	s, err := elfSymbols(f)
	if err != nil {
		return nil, fmt.Errorf("read symbols of %s: %w", path, err)
	}
	s.Path = path
	return s, nil
}

func elfSymbols(f *elf.File) (*Symbols, error) {
	raw, err := f.Symbols()
	if errors.Is(err, elf.ErrNoSymbols) || (err == nil && len(raw) == 0) {
		return nil, fmt.Errorf("%w in the ELF file (stripped? give the build directory's vmlinux or the -dbg package)", ErrNoSymbols)
	}
	if err != nil {
		return nil, err
	}
	syms := make([]Symbol, 0, len(raw))
	for _, r := range raw {
		t, ok := nmType(f, r)
		if !ok || r.Name == "" {
			continue
		}
		syms = append(syms, Symbol{Name: r.Name, Addr: r.Value, Size: r.Size, Type: t})
	}
	s := newSymbols(SourceVmlinux, syms)
	s.ExactSizes = true
	if s.BuildID, err = buildID(f); err != nil {
		return nil, err
	}
	return s, nil
}

// nmType returns the type letter nm(1) (GNU binutils) prints for an ELF
// symbol, and false for the symbols nm leaves out without -a (section and
// file symbols). It follows bfd's decode_symclass: undefined, weak and
// unique bindings first, then the section by name prefix (coff_section_type)
// and by flags (decode_section_type); upper case for global symbols.
func nmType(f *elf.File, s elf.Symbol) (byte, bool) {
	typ := elf.ST_TYPE(s.Info)
	bind := elf.ST_BIND(s.Info)
	if typ == elf.STT_SECTION || typ == elf.STT_FILE {
		return 0, false
	}
	switch s.Section {
	case elf.SHN_COMMON:
		return 'C', true
	case elf.SHN_UNDEF:
		if bind == elf.STB_WEAK {
			if typ == elf.STT_OBJECT {
				return 'v', true
			}
			return 'w', true
		}
		return 'U', true
	}
	if typ == elf.STT_GNU_IFUNC {
		return 'i', true
	}
	if bind == elf.STB_WEAK {
		if typ == elf.STT_OBJECT {
			return 'V', true
		}
		return 'W', true
	}
	if bind == stbGNUUnique {
		return 'u', true
	}
	if bind != elf.STB_LOCAL && bind != elf.STB_GLOBAL {
		return '?', true
	}
	var c byte
	switch {
	case s.Section == elf.SHN_ABS:
		c = 'a'
	case int(s.Section) < len(f.Sections):
		c = sectionType(f.Sections[s.Section])
	default:
		return '?', true
	}
	if bind == elf.STB_GLOBAL && c >= 'a' && c <= 'z' {
		c -= 'a' - 'A'
	}
	return c, true
}

// coffSectionTypes is bfd's table of section names with a fixed type
// letter (binutils/bfd/syms.c: stt), checked before the section flags.
// Since binutils 2.32 it holds only MSVC's sections: ELF's .rodata, which
// the kernel links writable, is 'd' by its flags.
var coffSectionTypes = []struct {
	name string
	c    byte
}{
	{".drectve", 'i'}, {".edata", 'e'}, {".idata", 'i'}, {".pdata", 'p'},
}

// sectionType is bfd's coff_section_type, then decode_section_type.
func sectionType(s *elf.Section) byte {
	for _, t := range coffSectionTypes {
		// A prefix followed by nothing, '.', '$' or a digit.
		if rest, ok := strings.CutPrefix(s.Name, t.name); ok && (rest == "" || strings.IndexByte(".$0123456789", rest[0]) >= 0) {
			return t.c
		}
	}
	alloc := s.Flags&elf.SHF_ALLOC != 0
	contents := s.Type != elf.SHT_NOBITS
	readOnly := s.Flags&elf.SHF_WRITE == 0
	switch {
	case s.Flags&elf.SHF_EXECINSTR != 0: // SEC_CODE
		return 't'
	case alloc && contents: // SEC_DATA
		if readOnly {
			return 'r'
		}
		return 'd'
	case !contents:
		return 'b'
	case isDebugSection(s.Name):
		return 'N'
	case readOnly:
		return 'n'
	}
	return '?'
}

// isDebugSection reports whether bfd marks a section SEC_DEBUGGING.
func isDebugSection(name string) bool {
	for _, p := range []string{".debug", ".zdebug", ".gnu.linkonce.wi.", ".line", ".stab"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// Bounds on kallsyms text, which comes from a guest. Linux 6.12 with
// CONFIG_KALLSYMS_ALL prints ~155k lines, 7 MB; KSYM_NAME_LEN is 512.
const (
	maxKallsymsBytes = 64 << 20
	maxKallsymsLines = 2_000_000
	maxKallsymsLine  = 1024
)

// kallsymsOptions says how to place kallsyms addresses on the image.
type kallsymsOptions struct {
	// LinkText is the link-time address of .text in the image's ELF
	// (Image.TextAddr). The KASLR offset is _text minus LinkText, and is
	// subtracted from every address but absolute (A) ones. 0 keeps the
	// run-time addresses: a nokaslr boot, or a System.map.
	LinkText uint64
	// SectionEnd, if set, returns the end of the image section holding a
	// link-time address (0 if none): a symbol's size then stops there
	// instead of running into the next section.
	SectionEnd func(addr uint64) uint64
}

// ParseKallsyms reads /proc/kallsyms text ("ffffffff81000000 T _text" lines;
// System.map has the same form). Symbols of modules ("[name]" suffix) are
// left out: they are not in the image. Sizes are the distance to the next
// higher address, as the kernel's own kallsyms_lookup_size_offset computes
// them; for Linux 6.2+ that next address is usually the next function's
// __pfx_ padding, which keeps the padding out of the size.
//
// Input is bounded by maxKallsymsBytes and maxKallsymsLines (ErrTooLarge).
// All-zero addresses give ErrAddressesHidden.
func ParseKallsyms(r io.Reader, opts kallsymsOptions) (*Symbols, error) {
	s, err := parseKallsyms(r, opts)
	if err != nil {
		return nil, fmt.Errorf("parse kallsyms: %w", err)
	}
	return s, nil
}

func parseKallsyms(r io.Reader, opts kallsymsOptions) (*Symbols, error) {
	lr := &io.LimitedReader{R: r, N: maxKallsymsBytes + 1}
	sc := bufio.NewScanner(lr)
	sc.Buffer(make([]byte, 0, maxKallsymsLine), maxKallsymsLine)
	var (
		syms    []Symbol
		lines   int
		nonZero bool
		text    uint64
		hasText bool
	)
	for sc.Scan() {
		lines++
		if lines > maxKallsymsLines {
			return nil, fmt.Errorf("%w: more than %d lines", ErrTooLarge, maxKallsymsLines)
		}
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		fields := bytes.Fields(line)
		if len(fields) < 3 {
			return nil, fmt.Errorf("line %d: %q is not \"address type name\"", lines, line)
		}
		if len(fields) > 3 {
			continue // a module's symbol: "addr t name\t[module]"
		}
		addr, err := strconv.ParseUint(string(fields[0]), 16, 64)
		if err != nil || len(fields[1]) != 1 || !isTypeLetter(fields[1][0]) {
			return nil, fmt.Errorf("line %d: %q is not \"address type name\"", lines, line)
		}
		name := string(fields[2])
		if addr != 0 {
			nonZero = true
		}
		if name == "_text" {
			text, hasText = addr, true
		}
		syms = append(syms, Symbol{Name: name, Addr: addr, Type: fields[1][0]})
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%w: a line longer than %d bytes (not kallsyms?)", ErrTooLarge, maxKallsymsLine)
		}
		return nil, err
	}
	if lr.N <= 0 {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, maxKallsymsBytes)
	}
	if len(syms) == 0 {
		return nil, fmt.Errorf("%w: empty kallsyms", ErrNoSymbols)
	}
	if !nonZero {
		return nil, fmt.Errorf("%w: every address is 0 (read it as root, with kernel.kptr_restrict < 2)", ErrAddressesHidden)
	}
	var offset uint64
	if opts.LinkText != 0 {
		if !hasText {
			return nil, fmt.Errorf("%w: no _text symbol to find the KASLR offset with (not kallsyms of a kernel?)", ErrNoSymbols)
		}
		if text < opts.LinkText {
			return nil, fmt.Errorf("_text %#x is below the image's .text %#x: kallsyms of another kernel?", text, opts.LinkText)
		}
		offset = text - opts.LinkText
	}
	for i := range syms {
		if !isAbsolute(syms[i].Type) {
			syms[i].Addr -= offset
		}
	}
	s := newSymbols(SourceKallsyms, syms)
	s.KASLROffset = offset
	s.setDistanceSizes(opts.SectionEnd)
	return s, nil
}

func isAbsolute(t byte) bool { return t == 'a' || t == 'A' }

// isTypeLetter reports whether t is a symbol type kallsyms prints: an
// ASCII letter, as nm's. Any other byte (a guest's kallsyms is untrusted)
// is no type, and would not print as one byte.
func isTypeLetter(t byte) bool { return 'a' <= t && t <= 'z' || 'A' <= t && t <= 'Z' }

// setDistanceSizes sets each symbol's size to the distance to the next
// higher address among the non-absolute symbols, stopping at the end of
// its section when sectionEnd knows it. Absolute symbols (per-CPU
// offsets) get 0.
func (s *Symbols) setDistanceSizes(sectionEnd func(uint64) uint64) {
	var placed []int // indexes of the non-absolute symbols, by address
	for i, sym := range s.syms {
		if !isAbsolute(sym.Type) {
			placed = append(placed, i)
		}
	}
	for k, i := range placed {
		sym := &s.syms[i]
		// Aliases share an address: the size runs to the first higher one.
		for _, j := range placed[k+1:] {
			if s.syms[j].Addr > sym.Addr {
				sym.Size = s.syms[j].Addr - sym.Addr
				break
			}
		}
		if sectionEnd != nil {
			if end := sectionEnd(sym.Addr); end > sym.Addr && (sym.Size == 0 || sym.Addr+sym.Size > end) {
				sym.Size = end - sym.Addr
			}
		}
	}
}

// readDebugPackage reads the symbols of the vmlinux in a Debian
// linux-image-<release>-dbg package, unpacked into cacheDir once
// (kernel.DebugVmlinux). Pairing it with an image is the caller's check
// (see Load): this reads any such package.
func readDebugPackage(deb, cacheDir string) (*Symbols, error) {
	vmlinux, _, err := kernel.DebugVmlinux(deb, cacheDir)
	if err != nil {
		return nil, err
	}
	s, err := readVmlinux(vmlinux)
	if err != nil {
		return nil, err
	}
	s.Kind = SourceDebugPackage
	return s, nil
}

// stbGNUUnique is the GNU unique binding (STB_LOOS), nm type 'u'.
const stbGNUUnique elf.SymBind = 10
