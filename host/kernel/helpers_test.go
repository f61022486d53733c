package kernel

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
)

// fakeBzImage returns the start of an x86 bzImage whose setup header says
// version (e.g. "6.9.0-test (user@host) #1 SMP").
func fakeBzImage(version string) []byte {
	b := make([]byte, 0x400)
	b[0x1F1] = 1 // setup_sects
	b[0x1FE], b[0x1FF] = 0x55, 0xAA
	copy(b[0x202:], "HdrS")
	binary.LittleEndian.PutUint16(b[0x206:], 0x020F) // boot protocol 2.15
	const at = 0x300
	binary.LittleEndian.PutUint16(b[0x20E:], at-0x200)
	copy(b[at:], version+"\x00")
	return b
}

const fakeRelease = "6.9.0-test"

var fakeVersion = fakeRelease + " (user@host) #1 SMP"

// writeFile writes data to dir/rel, creating directories, and returns the path.
func writeFile(t *testing.T, dir, rel string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// fakeModule returns a minimal relocatable ELF file whose .modinfo section
// holds the given key=value entries, like a kernel module's.
func fakeModule(modinfo ...string) []byte {
	info := []byte(strings.Join(modinfo, "\x00") + "\x00")
	shstrtab := []byte("\x00.modinfo\x00.shstrtab\x00")
	infoOff := uint64(64)
	strOff := infoOff + uint64(len(info))
	shOff := (strOff + uint64(len(shstrtab)) + 7) &^ 7

	var buf bytes.Buffer
	hdr := elf.Header64{
		Type: uint16(elf.ET_REL), Machine: uint16(elf.EM_X86_64), Version: uint32(elf.EV_CURRENT),
		Shoff: shOff, Ehsize: 64, Shentsize: 64, Shnum: 3, Shstrndx: 2,
	}
	copy(hdr.Ident[:], elf.ELFMAG)
	hdr.Ident[elf.EI_CLASS] = byte(elf.ELFCLASS64)
	hdr.Ident[elf.EI_DATA] = byte(elf.ELFDATA2LSB)
	hdr.Ident[elf.EI_VERSION] = byte(elf.EV_CURRENT)
	binary.Write(&buf, binary.LittleEndian, hdr)
	buf.Write(info)
	buf.Write(shstrtab)
	buf.Write(make([]byte, shOff-uint64(buf.Len())))
	sections := []elf.Section64{
		{},
		{Name: 1, Type: uint32(elf.SHT_PROGBITS), Flags: uint64(elf.SHF_ALLOC), Off: infoOff, Size: uint64(len(info)), Addralign: 1},
		{Name: 10, Type: uint32(elf.SHT_STRTAB), Off: strOff, Size: uint64(len(shstrtab)), Addralign: 1},
	}
	binary.Write(&buf, binary.LittleEndian, sections)
	return buf.Bytes()
}

// tarEntry is one entry of a tar archive built by a test.
type tarEntry struct {
	name     string
	typ      byte // tar.TypeReg when 0
	data     []byte
	linkname string
}

func makeTar(t testing.TB, entries []tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: 0o644, Size: int64(len(e.data)), Linkname: e.linkname}
		switch e.typ {
		case 0:
			h.Typeflag = tar.TypeReg
		case tar.TypeDir:
			h.Mode = 0o755
		}
		if h.Typeflag != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			if _, err := tw.Write(e.data); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// compressed is b written through the compressor open returns.
func compressed(t testing.TB, b []byte, open func(io.Writer) (io.WriteCloser, error)) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := open(&buf)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(b)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func gzipBytes(t testing.TB, b []byte) []byte {
	return compressed(t, b, func(w io.Writer) (io.WriteCloser, error) { return gzip.NewWriter(w), nil })
}

func xzBytes(t testing.TB, b []byte) []byte {
	return compressed(t, b, func(w io.Writer) (io.WriteCloser, error) { return xz.NewWriter(w) })
}

func zstdBytes(t testing.TB, b []byte) []byte {
	return compressed(t, b, func(w io.Writer) (io.WriteCloser, error) { return zstd.NewWriter(w) })
}

// arMember is one member of an ar archive.
type arMember struct {
	name string
	data []byte
}

// makeAr builds an ar archive the way dpkg-deb does.
func makeAr(members ...arMember) []byte {
	var buf bytes.Buffer
	buf.WriteString(arMagic)
	for _, m := range members {
		fmt.Fprintf(&buf, "%-16s%-12d%-6d%-6d%-8s%-10d`\n", m.name, 0, 0, 0, "100644", len(m.data))
		buf.Write(m.data)
		if len(m.data)%2 == 1 {
			buf.WriteByte('\n')
		}
	}
	return buf.Bytes()
}

// makeDeb builds a Debian package whose data member is called dataName and
// holds data (already compressed as the name says).
func makeDeb(dataName string, data []byte) []byte {
	return makeAr(
		arMember{"debian-binary", []byte("2.0\n")},
		arMember{"control.tar.gz", []byte("not read")},
		arMember{dataName, data},
	)
}

// fakeKernelTree returns the tar entries of a linux-image package for
// fakeRelease with the given extra module entries.
func fakeKernelTree(modules ...tarEntry) []tarEntry {
	lib := "./lib/modules/" + fakeRelease + "/"
	entries := []tarEntry{
		{name: "./", typ: tar.TypeDir},
		{name: "./boot/", typ: tar.TypeDir},
		{name: "./boot/vmlinuz-" + fakeRelease, data: fakeBzImage(fakeVersion)},
		{name: "./boot/config-" + fakeRelease, data: []byte("CONFIG_VIRTIO_PCI=m\n")},
		{name: lib, typ: tar.TypeDir},
		{name: lib + "modules.builtin", data: []byte("kernel/drivers/virtio/virtio.ko\n")},
	}
	return append(entries, modules...)
}
