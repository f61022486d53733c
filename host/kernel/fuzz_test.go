package kernel

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// FuzzBzImageHeader reads arbitrary file heads as bzImages: a release read
// from the setup header is a plausible release of at most
// maxKernelVersionLen bytes, and a payload found lies inside the image.
// The seeds are the setup headers of Debian's 6.1 and 6.12 images
// (testdata/fuzz/FuzzBzImageHeader).
func FuzzBzImageHeader(f *testing.F) {
	f.Add(fakeBzImage(fakeVersion))
	f.Add([]byte("\x7fELF\x02\x01\x01"))
	f.Add([]byte(arMagic))
	f.Fuzz(func(t *testing.T, image []byte) {
		sniffHead(image)
		rel, err := releaseFromHeader(image[:min(len(image), releaseHeadSize)])
		if err == nil && (!validRelease(rel) || len(rel) > maxKernelVersionLen) {
			t.Fatalf("releaseFromHeader = %q, not a plausible release", rel)
		}
		p, err := Payload(image)
		if err != nil {
			return
		}
		if len(p) < 4 || len(p) > len(image) || !bytes.Contains(image, p) {
			t.Fatalf("Payload = %d bytes, not inside the %d-byte image", len(p), len(image))
		}
	})
}

// FuzzDebData reads arbitrary files as Debian packages and unpacks their
// data member, at most 1 MiB of it: unpacking reads no more than the limit
// of the decompressed archive, and whatever unpacks stays below the
// destination, holds no symbolic link and no more bytes than the limit.
// The seeds are the heads of Debian's 6.1 and 6.12 packages
// (testdata/fuzz/FuzzDebData), small packages of each compression, and
// bombs: skipped-entries-bomb is 8.5 KB of zstd that decompresses to two
// 128 MiB entries extractTar skips (the root "." as a file, and a
// contiguous file), which stalled fuzzing when skipped entries did not
// count against the limit.
func FuzzDebData(f *testing.F) {
	tree := []tarEntry{{name: "./", typ: tar.TypeDir}, {name: "./boot/vmlinuz-" + fakeRelease, data: fakeBzImage(fakeVersion)},
		{name: "./boot/link", typ: tar.TypeLink, linkname: "./boot/vmlinuz-" + fakeRelease}, {name: "../escape", data: []byte("x")}}
	plain := makeTar(f, tree[:3])
	f.Add(makeDeb("data.tar", plain))
	f.Add(makeDeb("data.tar.gz", gzipBytes(f, plain)))
	f.Add(makeDeb("data.tar.gz", gzipBytes(f, makeTar(f, tree))))
	f.Add(makeDeb("data.tar.bz2", []byte("BZh")))
	const limit = 1 << 20
	f.Fuzz(func(t *testing.T, deb []byte) {
		name, data, err := findDebData(bytes.NewReader(deb), int64(len(deb)))
		if err != nil {
			return
		}
		r, closeData, err := decompressor(name, data)
		if err != nil {
			return
		}
		defer closeData()
		root := t.TempDir()
		dst := filepath.Join(root, "pkg")
		os.Mkdir(dst, 0o755)
		read := &readCounter{r: r, max: limit}
		extractTar(read, dst, limit)
		if read.over {
			t.Fatalf("unpacking read more than the %d bytes allowed of the decompressed archive", limit)
		}
		if entries, _ := os.ReadDir(root); len(entries) != 1 {
			t.Fatalf("unpacking wrote beside its destination: %v", entries)
		}
		var total int64
		filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if d.Type()&fs.ModeSymlink != 0 {
				t.Errorf("unpacked a symbolic link %s", p)
			}
			if rel, _ := filepath.Rel(dst, p); strings.HasPrefix(rel, "..") {
				t.Errorf("unpacked %s outside %s", p, dst)
			}
			if info, err := d.Info(); err == nil && d.Type().IsRegular() {
				total += info.Size()
			}
			return nil
		})
		if total > limit {
			t.Fatalf("unpacked %d bytes, more than the %d allowed", total, limit)
		}
	})
}

// readCounter reads r and fails once more than max bytes are asked of it,
// so that a test of a bound fails at once rather than decompressing a bomb.
type readCounter struct {
	r    io.Reader
	n    int64
	max  int64
	over bool
}

func (c *readCounter) Read(p []byte) (int, error) {
	if c.n+int64(len(p)) > c.max {
		p = p[:max(c.max-c.n, 0)]
		if len(p) == 0 {
			c.over = true
			return 0, errors.New("read past the limit")
		}
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// TestExtractTarLimit checks the bound on what a package unpacks to:
// headers, skipped entries and files all count.
func TestExtractTarLimit(t *testing.T) {
	// ./a is a 512-byte header, 600 bytes and 424 of padding; ./b's header
	// then leaves 452 of 2500 bytes, too few for its 600.
	data := makeTar(t, []tarEntry{{name: "./a", data: make([]byte, 600)}, {name: "./b", data: make([]byte, 600)}})
	if err := extractTar(bytes.NewReader(data), t.TempDir(), 2500); err == nil || !strings.Contains(err.Error(), `"./b" makes the package unpack to more than 2500 bytes`) {
		t.Errorf("extractTar(2 files of 600 bytes, limit 2500) = %v; want the limit's error naming ./b", err)
	}
	if err := extractTar(bytes.NewReader(data), t.TempDir(), maxUnpackedBytes); err != nil {
		t.Errorf("extractTar(1200 bytes) = %v", err)
	}
	// Empty entries cost their headers: 100 directories are 51,200 bytes.
	var dirs []tarEntry
	for range 100 {
		dirs = append(dirs, tarEntry{name: "./d/", typ: tar.TypeDir})
	}
	if err := extractTar(bytes.NewReader(makeTar(t, dirs)), t.TempDir(), 50_000); err == nil || !strings.Contains(err.Error(), "the package unpacks to more than 50000 bytes") {
		t.Errorf("extractTar(100 directory headers, limit 50000) = %v; want the limit's error", err)
	}
}

// FuzzModinfo reads the .modinfo of arbitrary files as modules of a
// package: what it finds is no more than maxModinfoBytes, and each
// dependency is a name, trimmed, without commas. The seeds are a small
// module of Debian's 6.1 package (testdata/fuzz/FuzzModinfo) and
// zstd-bomb, the same module whose .modinfo is a compressed section of
// 64 MiB of zeros (see TestModinfoBomb).
func FuzzModinfo(f *testing.F) {
	f.Fuzz(func(t *testing.T, ko []byte) {
		info, err := parseModinfo(bytes.NewReader(ko))
		if err != nil {
			return
		}
		n := len(info.vermagic)
		for _, d := range info.depends {
			n += len(d)
			if d == "" || d != strings.TrimSpace(d) || strings.Contains(d, ",") {
				t.Fatalf("dependency %q", d)
			}
		}
		if n > maxModinfoBytes {
			t.Fatalf("read %d bytes of .modinfo, more than the %d allowed", n, maxModinfoBytes)
		}
	})
}

// TestModinfoBomb reads a module whose .modinfo is a compressed section
// (SHF_COMPRESSED, zstd) of 64 MiB of zeros in 2 KB: an error once
// maxModinfoBytes are read, not 64 MiB in memory.
func TestModinfoBomb(t *testing.T) {
	ko := seedBytes(t, "testdata/fuzz/FuzzModinfo/real-module-61")
	info, err := parseModinfo(bytes.NewReader(ko))
	if err != nil || info.vermagic == "" {
		t.Fatalf("parseModinfo(a module of Debian 6.1) = %+v, %v; want its vermagic", info, err)
	}
	seed := seedBytes(t, "testdata/fuzz/FuzzModinfo/zstd-bomb")
	if f, err := elf.NewFile(bytes.NewReader(seed)); err != nil || f.Section(".modinfo") == nil || f.Section(".modinfo").Size != 64<<20 {
		t.Fatal("testdata/fuzz/FuzzModinfo/zstd-bomb is not a module with 64 MiB as .modinfo")
	}
	for name, bomb := range map[string][]byte{"zstd-bomb": seed, "made now": compressedModinfo(t, ko, make([]byte, 64<<20))} {
		if _, err := parseModinfo(bytes.NewReader(bomb)); err == nil || !strings.Contains(err.Error(), "larger than") {
			t.Errorf("parseModinfo(%s, .modinfo of 64 MiB of zeros) = %v; want the size error", name, err)
		}
	}
}

// compressedModinfo returns the ELF64 module ko with content, compressed
// with zstd, as its .modinfo section: appended to the file, the section
// header pointing at it. (zstd-bomb was made so at the best compression.)
func compressedModinfo(t *testing.T, ko, content []byte) []byte {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(ko))
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(f.Sections, func(s *elf.Section) bool { return s.Name == ".modinfo" })
	if f.Class != elf.ELFCLASS64 || f.ByteOrder != binary.LittleEndian || i < 0 {
		t.Fatal("not a little-endian ELF64 module with .modinfo")
	}
	var sec bytes.Buffer
	binary.Write(&sec, binary.LittleEndian, elf.Chdr64{Type: uint32(elf.COMPRESS_ZSTD), Size: uint64(len(content)), Addralign: 1})
	zw, _ := zstd.NewWriter(&sec, zstd.WithEncoderConcurrency(1))
	zw.Write(content)
	zw.Close()
	out := append(bytes.Clone(ko), make([]byte, (8-len(ko)%8)%8)...)
	at := uint64(len(out))
	out = append(out, sec.Bytes()...)
	hdr := out[binary.LittleEndian.Uint64(out[0x28:])+uint64(i)*64:]
	flags := binary.LittleEndian.Uint64(hdr[8:])&^uint64(elf.SHF_ALLOC) | uint64(elf.SHF_COMPRESSED) // only unallocated sections compress
	binary.LittleEndian.PutUint64(hdr[8:], flags)
	binary.LittleEndian.PutUint64(hdr[24:], at)
	binary.LittleEndian.PutUint64(hdr[32:], uint64(sec.Len()))
	return out
}

// seedBytes returns the []byte value of a one-value corpus file.
func seedBytes(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s string
	if _, err := fmt.Sscanf(strings.TrimPrefix(string(data), "go test fuzz v1\n[]byte("), "%q", &s); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return []byte(s)
}
