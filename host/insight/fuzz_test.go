package insight

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"testing"
)

var hexID = regexp.MustCompile(`^(?:[0-9a-f]{2})*$`)

// FuzzExtractPayload extracts the payload of arbitrary images: a payload
// extracted is at most maxPayloadSize bytes, an ELF file, with a hex build
// ID.
func FuzzExtractPayload(f *testing.F) {
	vmlinux := testELFBytes(f)
	f.Add(fakeBzImage(vmlinux, 0x020f))
	f.Add(fakeBzImage(withSize([]byte("\x28\xb5\x2f\xfd"), 1<<29), 0x020f))
	f.Add(fakeBzImage(withSize([]byte("\x1f\x8b\x08\x00"), 100), 0x020f))
	if _, err := exec.LookPath("xz"); err == nil { // the kernel's xz payload: BCJ, then LZMA2
		f.Add(fakeBzImage(withSize(xzBCJ(f, vmlinux), len(vmlinux)), 0x020f))
	}
	f.Fuzz(func(t *testing.T, image []byte) {
		p, err := extractPayload(image)
		if err != nil {
			return
		}
		if len(p.ELF) > maxPayloadSize || !hexID.MatchString(p.BuildID) {
			t.Fatalf("ExtractPayload = %d bytes, build ID %q", len(p.ELF), p.BuildID)
		}
		if _, err := elf.NewFile(bytes.NewReader(p.ELF)); err != nil {
			t.Fatalf("ExtractPayload gave a payload that is not ELF: %v", err)
		}
	})
}

// FuzzELFSymbols reads the symbols and build ID of arbitrary ELF files: a
// build ID is hex, every symbol has a name Lookup finds. The seeds are
// small modules of Debian's 6.1 package (testdata/fuzz/FuzzELFSymbols).
func FuzzELFSymbols(f *testing.F) {
	f.Add(testELFBytes(f))
	f.Fuzz(func(t *testing.T, data []byte) {
		ef, err := elf.NewFile(bytes.NewReader(data))
		if err != nil {
			return
		}
		defer ef.Close()
		if id, err := buildID(ef); err == nil && !hexID.MatchString(id) {
			t.Fatalf("buildID = %q, not hex", id)
		}
		s, err := elfSymbols(ef)
		if err != nil {
			return
		}
		checkSymbols(t, s)
	})
}

func checkSymbols(t *testing.T, s *Symbols) {
	t.Helper()
	for _, sym := range s.All() {
		if sym.Name == "" {
			t.Fatalf("a symbol without a name at %#x", sym.Addr)
		}
		found := false
		for _, l := range s.Lookup(sym.Name) {
			found = found || l.Addr == sym.Addr
		}
		if !found {
			t.Fatalf("Lookup(%q) does not find the symbol at %#x", sym.Name, sym.Addr)
		}
	}
}

// FuzzParseKallsyms parses arbitrary kallsyms text placed on an image
// whose .text links at linkText: at most one symbol per line, each one
// Lookup finds, and the symbols printed back as kallsyms (at their
// link-time addresses) parse to the same symbols. The seeds are heads of
// Debian's System.map files and a guest's kallsyms
// (testdata/fuzz/FuzzParseKallsyms).
func FuzzParseKallsyms(f *testing.F) {
	f.Add([]byte("ffffffff81000000 T _text\nffffffff81000010 t f\nffffffffc0000000 t m\t[mod]\n0000000000000000 A fixed_percpu_data\n"), uint64(0xffffffff81000000))
	f.Fuzz(func(t *testing.T, text []byte, linkText uint64) {
		s, err := ParseKallsyms(bytes.NewReader(text), kallsymsOptions{LinkText: linkText})
		if err != nil {
			return
		}
		if n := len(s.All()); n > bytes.Count(text, []byte("\n"))+1 {
			t.Fatalf("%d symbols from %d lines", n, bytes.Count(text, []byte("\n"))+1)
		}
		checkSymbols(t, s)
		var again strings.Builder
		for _, sym := range s.All() {
			fmt.Fprintf(&again, "%016x %c %s\n", sym.Addr, sym.Type, sym.Name)
		}
		s2, err := ParseKallsyms(strings.NewReader(again.String()), kallsymsOptions{})
		if errors.Is(err, ErrAddressesHidden) {
			return // every symbol sat at _text: at link time they are all 0
		}
		if err != nil {
			t.Fatalf("printed symbols do not parse: %v\n%s", err, again.String())
		}
		if a, b := symbolSet(s), symbolSet(s2); a != b {
			t.Fatalf("printed symbols parse to\n%s\nwant\n%s", b, a)
		}
	})
}

func symbolSet(s *Symbols) string {
	var lines []string
	for _, sym := range s.All() {
		lines = append(lines, fmt.Sprintf("%x %c %s", sym.Addr, sym.Type, sym.Name))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
