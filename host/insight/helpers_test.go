package insight

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/lpmbisect/lpmbisect/host/kernel"
	"github.com/lpmbisect/lpmbisect/testbed/testkernels"
)

// golden compares got with testdata/name, or rewrites the file when
// LPMBISECT_UPDATE_GOLDEN is set (as the other packages' golden tests do).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if os.Getenv("LPMBISECT_UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (LPMBISECT_UPDATE_GOLDEN=1 writes it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (LPMBISECT_UPDATE_GOLDEN=1 rewrites it):\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

// Facts of the Debian kernels in internal/testkernels.
const (
	buildID61   = "01d2640d3a13145ee314eb05b155f141b7b7058b"
	buildID612  = "7f76f39faf07f34cfa9fadd801e131bfa8cb6dc3"
	x86TextAddr = 0xffffffff81000000
)

var kallsymsFiles = map[string]string{
	testkernels.Debian61:  "kallsyms-" + testkernels.Release61 + ".txt",
	testkernels.Debian612: "kallsyms-" + testkernels.Release612 + ".txt",
}

// debianImages unpacks each Debian package once for all tests of the
// package, into a directory removed by TestMain.
var debianImages struct {
	sync.Mutex
	cache  string
	images map[string]string
}

// debianImage returns the bzImage of a Debian package of testkernels.
func debianImage(t *testing.T, pkg string) string {
	t.Helper()
	deb := testkernels.Deb(t, pkg)
	debianImages.Lock()
	defer debianImages.Unlock()
	if img, ok := debianImages.images[pkg]; ok {
		return img
	}
	if debianImages.cache == "" {
		dir, err := os.MkdirTemp("", "insight-test-")
		if err != nil {
			t.Fatal(err)
		}
		debianImages.cache = testkernels.ShareCache(t, dir)
		debianImages.images = map[string]string{}
	}
	k, err := kernel.Resolve(deb, debianImages.cache)
	if err != nil {
		t.Fatal(err)
	}
	debianImages.images[pkg] = k.Image
	return k.Image
}

func TestMain(m *testing.M) {
	code := m.Run()
	if debianImages.cache != "" {
		os.RemoveAll(debianImages.cache)
	}
	os.Exit(code)
}

// testSym is a symbol of a synthetic ELF file. Off is relative to the
// start of its section, .text unless Section names another of
// testSections.
type testSym struct {
	Name    string
	Off     uint64
	Size    uint64
	Global  bool
	Weak    bool
	Type    elf.SymType // STT_FUNC if 0
	Section string
}

// testSections are the sections besides .text that writeTestELF adds,
// with the flags the kernel links them with (its .rodata is writable).
var testSections = []struct {
	name  string
	typ   elf.SectionType
	flags elf.SectionFlag
}{
	{".init.text", elf.SHT_PROGBITS, elf.SHF_ALLOC | elf.SHF_EXECINSTR},
	{".rodata", elf.SHT_PROGBITS, elf.SHF_ALLOC | elf.SHF_WRITE},
	{"__ksymtab", elf.SHT_PROGBITS, elf.SHF_ALLOC},
	{".data", elf.SHT_PROGBITS, elf.SHF_ALLOC | elf.SHF_WRITE},
	{".bss", elf.SHT_NOBITS, elf.SHF_ALLOC | elf.SHF_WRITE},
	{".comment", elf.SHT_PROGBITS, 0},
}

// writeTestELF writes a minimal x86-64 ELF file: .text (at textAddr) with
// code, a .notes section with a GNU build ID if buildID is not nil, and a
// symbol table unless syms is nil. debug/elf and nm read it.
func writeTestELF(t testing.TB, path string, code []byte, textAddr uint64, buildID []byte, syms []testSym) {
	t.Helper()
	le := binary.LittleEndian
	type section struct {
		name              string
		typ               elf.SectionType
		flags             elf.SectionFlag
		addr              uint64
		data              []byte
		link, info, align uint32
		entsize           uint64
	}
	secs := []section{{}} // the null section
	secs = append(secs, section{name: ".text", typ: elf.SHT_PROGBITS, flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, addr: textAddr, data: code, align: 16})
	shndx := map[string]int{".text": 1}
	addr := textAddr + uint64(len(code)) + 0x1000
	for _, ts := range testSections {
		shndx[ts.name] = len(secs)
		data := make([]byte, 0x100)
		if ts.typ == elf.SHT_NOBITS {
			data = nil
		}
		a := addr
		if ts.flags&elf.SHF_ALLOC == 0 {
			a = 0
		}
		secs = append(secs, section{name: ts.name, typ: ts.typ, flags: ts.flags, addr: a, data: data, align: 16})
		addr += 0x1000
	}
	if buildID != nil {
		var note bytes.Buffer
		binary.Write(&note, le, []uint32{4, uint32(len(buildID)), ntGNUBuildID})
		note.WriteString("GNU\x00")
		note.Write(buildID)
		for note.Len()%4 != 0 {
			note.WriteByte(0)
		}
		secs = append(secs, section{name: ".notes", typ: elf.SHT_NOTE, flags: elf.SHF_ALLOC, addr: textAddr + uint64(len(code)) + 0x1000, data: note.Bytes(), align: 4})
	}
	if syms != nil {
		strtab := []byte{0}
		var symtab bytes.Buffer
		symtab.Write(make([]byte, 24)) // the null symbol
		write := func(s testSym) {
			bind := elf.STB_LOCAL
			switch {
			case s.Weak:
				bind = elf.STB_WEAK
			case s.Global:
				bind = elf.STB_GLOBAL
			}
			typ := s.Type
			if typ == 0 {
				typ = elf.STT_FUNC
			}
			sec := ".text"
			if s.Section != "" {
				sec = s.Section
			}
			i, ok := shndx[sec]
			if !ok {
				t.Fatalf("writeTestELF: no section %q", sec)
			}
			binary.Write(&symtab, le, elf.Sym64{
				Name: uint32(len(strtab)), Info: elf.ST_INFO(bind, typ), Shndx: uint16(i),
				Value: secs[i].addr + s.Off, Size: s.Size,
			})
			strtab = append(append(strtab, s.Name...), 0)
		}
		locals := uint32(1)
		for _, s := range syms {
			if !s.Global && !s.Weak {
				write(s)
				locals++
			}
		}
		for _, s := range syms {
			if s.Global || s.Weak {
				write(s)
			}
		}
		n := uint32(len(secs))
		secs = append(secs,
			section{name: ".symtab", typ: elf.SHT_SYMTAB, data: symtab.Bytes(), link: n + 1, info: locals, align: 8, entsize: 24},
			section{name: ".strtab", typ: elf.SHT_STRTAB, data: strtab, align: 1})
	}
	shstrtab := []byte{0}
	names := make([]uint32, len(secs)+1)
	for i := 1; i < len(secs); i++ {
		names[i] = uint32(len(shstrtab))
		shstrtab = append(append(shstrtab, secs[i].name...), 0)
	}
	names[len(secs)] = uint32(len(shstrtab))
	shstrtab = append(shstrtab, ".shstrtab\x00"...)
	secs = append(secs, section{name: ".shstrtab", typ: elf.SHT_STRTAB, data: shstrtab, align: 1})

	var body bytes.Buffer
	body.Write(make([]byte, 64)) // the ELF header, written last
	offsets := make([]uint64, len(secs))
	for i := 1; i < len(secs); i++ {
		for body.Len()%16 != 0 {
			body.WriteByte(0)
		}
		offsets[i] = uint64(body.Len())
		body.Write(secs[i].data)
	}
	for body.Len()%8 != 0 {
		body.WriteByte(0)
	}
	shoff := uint64(body.Len())
	for i, s := range secs {
		binary.Write(&body, le, elf.Section64{
			Name: names[i], Type: uint32(s.typ), Flags: uint64(s.flags), Addr: s.addr,
			Off: offsets[i], Size: uint64(len(s.data)), Link: s.link, Info: s.info,
			Addralign: uint64(s.align), Entsize: s.entsize,
		})
	}
	out := body.Bytes()
	var hdr bytes.Buffer
	binary.Write(&hdr, le, elf.Header64{
		Ident:     [16]byte{0x7f, 'E', 'L', 'F', byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)},
		Type:      uint16(elf.ET_EXEC),
		Machine:   uint16(elf.EM_X86_64),
		Version:   uint32(elf.EV_CURRENT),
		Shoff:     shoff,
		Ehsize:    64,
		Shentsize: 64,
		Shnum:     uint16(len(secs)),
		Shstrndx:  uint16(len(secs) - 1),
	})
	copy(out, hdr.Bytes())
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}
