package insight

import (
	"bytes"
	"compress/gzip"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/lpmbisect/lpmbisect/host/kernel"
	"github.com/lpmbisect/lpmbisect/wire"
)

// maxPayloadSize bounds a decompressed payload (the vmlinux ELF and its
// relocations). Debian's are 60–70 MB; an allyesconfig vmlinux without
// debug info stays far below. A hostile or corrupt image that claims or
// produces more gets ErrPayloadTooLarge instead of the memory.
const maxPayloadSize = 512 << 20

// Errors of payload extraction; test with errors.Is.
var (
	// ErrPayloadTooLarge means the payload decompresses to more than
	// maxPayloadSize bytes.
	ErrPayloadTooLarge = errors.New("payload too large")
)

// Compression is how a bzImage's payload is compressed (CONFIG_KERNEL_*).
type Compression string

// Compressions that Payload recognises. Only those marked are decompressed.
const (
	CompressionNone  Compression = "none"  // decompressed (CONFIG_KERNEL_UNCOMPRESSED)
	CompressionGzip  Compression = "gzip"  // decompressed
	CompressionLZ4   Compression = "lz4"   // decompressed (legacy frames, Debian 6.1)
	CompressionZstd  Compression = "zstd"  // decompressed (Debian 6.12)
	CompressionXZ    Compression = "xz"    // decompressed (with the x86 BCJ filter where the xz command is installed)
	CompressionBzip2 Compression = "bzip2" // recognised, not decompressed
	CompressionLZMA  Compression = "lzma"  // recognised, not decompressed
	CompressionLZO   Compression = "lzo"   // recognised, not decompressed
)

// Payload is the kernel ELF inside a bzImage.
type Payload struct {
	// ELF is the decompressed payload: the vmlinux ELF stripped of its
	// symbols (objcopy -S), followed by its relocations on relocatable
	// kernels. debug/elf reads it as is.
	ELF []byte
	// Compression is how the image stored it.
	Compression Compression
	// BuildID is the hex GNU build ID from .note.gnu.build-id, "" if none.
	BuildID string
	// Took is how long decompression took (zero when read from the cache).
	Took time.Duration
	// PVHEntry says the ELF has a PVH entry point (CONFIG_PVH, Linux
	// 5.0): QEMU (4.0) can boot it directly, without the bzImage's
	// set-up code and decompressor.
	PVHEntry bool
}

// ReadPayload extracts and decompresses the payload of the x86 bzImage file
// image. Requires boot protocol 2.08 (Linux 2.6.30).
func ReadPayload(image string) (*Payload, error) {
	data, err := os.ReadFile(image)
	if err != nil {
		return nil, fmt.Errorf("read payload: %w", err)
	}
	p, err := extractPayload(data)
	if err != nil {
		return nil, fmt.Errorf("read payload of %s: %w", image, err)
	}
	return p, nil
}

// extractPayload is ReadPayload for an image already in memory.
func extractPayload(image []byte) (*Payload, error) {
	compressed, err := kernel.Payload(image)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	kind, out, err := decompress(compressed)
	if err != nil {
		return nil, err
	}
	took := time.Since(start)
	id, pvh, err := elfNotes(out)
	if err != nil {
		return nil, fmt.Errorf("%s payload: %w", kind, err)
	}
	return &Payload{ELF: out, Compression: kind, BuildID: id, Took: took, PVHEntry: pvh}, nil
}

// Magic numbers of the compressors the kernel build may use
// (scripts/Makefile.lib), as they start the payload.
var compressionMagics = []struct {
	kind  Compression
	magic string
}{
	{CompressionNone, "\x7fELF"},
	{CompressionGzip, "\x1f\x8b"},
	{CompressionLZ4, "\x02\x21\x4c\x18"}, // legacy frame
	{CompressionZstd, "\x28\xb5\x2f\xfd"},
	{CompressionXZ, "\xfd7zXZ\x00"},
	{CompressionBzip2, "BZh"},
	{CompressionLZMA, "\x5d\x00\x00"},
	{CompressionLZO, "\x89LZO"},
}

// compressionOf tells a payload's compression by its first bytes.
func compressionOf(payload []byte) (Compression, error) {
	for _, m := range compressionMagics {
		if bytes.HasPrefix(payload, []byte(m.magic)) {
			return m.kind, nil
		}
	}
	return "", fmt.Errorf("%w: payload starts with % x, no known compression", kernel.ErrNotBzImage, payload[:min(len(payload), 4)])
}

// decompress decompresses a payload whose last four bytes are the
// little-endian size of the output (the kernel's size_append; gzip's own
// ISIZE field for gzip), bounding the output by maxPayloadSize.
func decompress(payload []byte) (Compression, []byte, error) {
	kind, err := compressionOf(payload)
	if err != nil {
		return "", nil, err
	}
	if kind == CompressionNone {
		if len(payload) > maxPayloadSize {
			return "", nil, fmt.Errorf("%w: %d bytes, limit %d", ErrPayloadTooLarge, len(payload), maxPayloadSize)
		}
		return kind, payload, nil
	}
	size := uint64(binary.LittleEndian.Uint32(payload[len(payload)-4:]))
	if size > maxPayloadSize {
		return "", nil, fmt.Errorf("%w: %s payload claims %d bytes, limit %d", ErrPayloadTooLarge, kind, size, maxPayloadSize)
	}
	body := payload[:len(payload)-4]
	var out []byte
	switch kind {
	case CompressionZstd:
		out, err = decompressZstd(body, size)
	case CompressionLZ4:
		out, err = readBounded(lz4.NewReader(bytes.NewReader(body)), size, len(body))
	case CompressionGzip:
		var zr *gzip.Reader
		zr, err = gzip.NewReader(bytes.NewReader(payload))
		if err == nil {
			zr.Multistream(false)
			out, err = readBounded(zr, size, len(payload))
		}
	case CompressionXZ:
		out, err = decompressXZ(body, size)
	default:
		return "", nil, &wire.UnsupportedError{Feature: fmt.Sprintf("%s-compressed payload", kind), Hint: "supported: gzip, lz4, zstd, xz, none"}
	}
	if err != nil {
		return "", nil, fmt.Errorf("decompress %s payload: %w", kind, err)
	}
	if uint64(len(out)) > size {
		return "", nil, fmt.Errorf("decompress %s payload: %w: %d bytes, more than the %d of the size trailer", kind, ErrPayloadTooLarge, len(out), size)
	}
	if uint64(len(out)) < size {
		return "", nil, fmt.Errorf("decompress %s payload: %d bytes, the size trailer says %d (corrupt image?)", kind, len(out), size)
	}
	return kind, out, nil
}

// decompressXZ decompresses an xz payload. The kernel's scripts/xz_wrap.sh
// compresses x86 kernels with the x86 BCJ filter before LZMA2, which the
// xz command decodes (kernel.XZReader) and the pure-Go fallback does not:
// without the command such a payload is unsupported, and says what to
// install.
func decompressXZ(body []byte, size uint64) ([]byte, error) {
	r, release, err := kernel.XZReader("xz payload", bytes.NewReader(body))
	var out []byte
	if err == nil {
		defer release()
		out, err = readBounded(r, size, len(body))
	}
	if err != nil && strings.Contains(err.Error(), "filter") {
		return nil, &wire.UnsupportedError{Feature: fmt.Sprintf("xz payload with a BCJ filter without the xz command (%v)", err),
			Hint: "install xz-utils, whose xz decodes it; or give the vmlinux, or build with CONFIG_KERNEL_ZSTD"}
	}
	return out, err
}

func decompressZstd(body []byte, size uint64) ([]byte, error) {
	// DecodeAll with a memory bound refuses frames that decode to more.
	// The bound is maxPayloadSize rather than size: it also caps the
	// frame's window, which the kernel's zstd -22 sets above the content
	// size (decompress then checks the size trailer).
	zr, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxPayloadSize))
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	return zr.DecodeAll(body, make([]byte, 0, presize(size, len(body))))
}

// presize is the buffer to start decompressing into: the size trailer's
// claim, but no more than maxRatio times the compressed bytes, so that a
// small hostile image that claims maxPayloadSize costs what it decompresses
// to rather than what it claims. Kernels compress about 4 to 5 times.
func presize(size uint64, compressed int) uint64 {
	const maxRatio = 16
	return min(size, uint64(compressed)*maxRatio)
}

// readBounded reads r, decompressing compressed bytes, to its end, failing
// if r produces more than size bytes.
func readBounded(r io.Reader, size uint64, compressed int) ([]byte, error) {
	// bytes.MinRead of room past the claim: Buffer.ReadFrom grows a full
	// buffer before it reads the end of the stream, which would copy a
	// kernel's 50 MB once more.
	buf := bytes.NewBuffer(make([]byte, 0, presize(size, compressed)+bytes.MinRead))
	n, err := io.Copy(buf, io.LimitReader(r, int64(size)+1))
	if err != nil {
		return nil, err
	}
	if uint64(n) > size {
		return nil, fmt.Errorf("%w: output exceeds the %d bytes of the size trailer", ErrPayloadTooLarge, size)
	}
	return buf.Bytes(), nil
}

// elfNotes reads, in one parse of the ELF file in memory, its hex GNU
// build ID ("" when it has none) and whether it has a PVH entry point
// note (XEN_ELFNOTE_PHYS32_ENTRY), which QEMU needs to boot an ELF kernel
// directly. An input that is not ELF is an error.
func elfNotes(data []byte) (id string, pvh bool, err error) {
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return "", false, fmt.Errorf("not an ELF file: %w", err)
	}
	defer f.Close()
	if id, err = buildID(f); err != nil {
		return "", false, err
	}
	desc, err := findNote(f, "Xen", xenElfnotePhys32Entry)
	return id, desc != nil && err == nil, nil
}

// buildID reads the GNU build ID note (NT_GNU_BUILD_ID) of f.
func buildID(f *elf.File) (string, error) {
	desc, err := findNote(f, "GNU", ntGNUBuildID)
	if desc == nil || err != nil {
		return "", err
	}
	return fmt.Sprintf("%x", desc), nil
}

// findNote returns the descriptor of the first note of owner and type typ
// in f's notes, nil when there is none.
func findNote(f *elf.File, owner string, typ uint32) ([]byte, error) {
	s := f.Section(".note.gnu.build-id")
	if owner != "GNU" || s == nil {
		// Some linker scripts merge the notes into .notes (the kernel's does).
		s = f.Section(".notes")
	}
	if s == nil || s.Type == elf.SHT_NOBITS {
		return nil, nil
	}
	notes, err := io.ReadAll(io.LimitReader(s.Open(), 1<<20))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", s.Name, err)
	}
	order := f.ByteOrder
	for len(notes) >= 12 {
		namesz := uint64(order.Uint32(notes[0:]))
		descsz := uint64(order.Uint32(notes[4:]))
		t := order.Uint32(notes[8:])
		nameEnd := 12 + align4(namesz)
		descEnd := nameEnd + align4(descsz)
		if descEnd > uint64(len(notes)) {
			return nil, fmt.Errorf("%s: corrupt note", s.Name)
		}
		name := notes[12 : 12+namesz]
		if t == typ && string(name) == owner+"\x00" {
			return notes[nameEnd : nameEnd+descsz], nil
		}
		notes = notes[descEnd:]
	}
	return nil, nil
}

// xenElfnotePhys32Entry is the note type of the PVH entry point
// (XEN_ELFNOTE_PHYS32_ENTRY in xen/interface/elfnote.h), owner "Xen".
const xenElfnotePhys32Entry = 18

// ntGNUBuildID is the note type of a GNU build ID (elf.h NT_GNU_BUILD_ID).
const ntGNUBuildID = 3

func align4(n uint64) uint64 { return (n + 3) &^ 3 }
