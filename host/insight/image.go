package insight

import (
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"os"

	"github.com/lpmbisect/lpmbisect/host/kernel"
	"github.com/lpmbisect/lpmbisect/wire"
)

// Image is the code of one kernel, read from its ELF: the payload of a
// bzImage (stripped of symbols, but with its section headers and text) or
// an unstripped vmlinux. Addresses are link-time addresses.
type Image struct {
	// Path is the file the image was read from.
	Path string `json:"path"`
	// Compression is the payload's, or "" for a vmlinux read directly.
	Compression Compression `json:"compression,omitempty"`
	// BuildID is the GNU build ID of the ELF, "" if it has none.
	BuildID string `json:"build_id,omitempty"`
	// TextAddr is the address of .text (0xffffffff81000000 on x86-64).
	TextAddr uint64 `json:"text_addr"`

	elf    *elf.File
	closer io.Closer // the vmlinux file, nil for a payload in memory
}

// openImage reads the code of the kernel file path: an x86 bzImage, whose
// payload is decompressed (ReadPayload), or an ELF vmlinux, read in place.
// Close releases it.
func openImage(path string) (*Image, error) {
	format, err := kernel.Sniff(path)
	if err != nil {
		return nil, fmt.Errorf("open image: %w", err)
	}
	if format == kernel.FormatVmlinux {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("open image: %w", err)
		}
		ef, err := elf.NewFile(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("open image %s: %w", path, err)
		}
		im, err := newImage(path, ef, "")
		if err != nil {
			f.Close()
			return nil, err
		}
		im.closer = f
		return im, nil
	}
	p, err := ReadPayload(path)
	if err != nil {
		return nil, err
	}
	return imageFromPayload(path, p)
}

// openPayloadELF opens elfPath, the payload of the bzImage image already
// extracted, as image's Image: the code is read from the ELF; the bzImage
// is read (kernel.Payload needs the whole file) but not decompressed, only
// its payload's first bytes looked at, for its compression.
func openPayloadELF(image, elfPath string) (*Image, error) {
	data, err := os.ReadFile(image)
	if err != nil {
		return nil, fmt.Errorf("open image: %w", err)
	}
	compressed, err := kernel.Payload(data)
	if err != nil {
		return nil, fmt.Errorf("open image %s: %w", image, err)
	}
	c, err := compressionOf(compressed)
	if err != nil {
		return nil, fmt.Errorf("open image %s: %w", image, err)
	}
	f, err := os.Open(elfPath)
	if err != nil {
		return nil, fmt.Errorf("open image: extracted payload: %w", err)
	}
	ef, err := elf.NewFile(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open image %s: extracted payload %s: %w", image, elfPath, err)
	}
	im, err := newImage(image, ef, c)
	if err != nil {
		f.Close()
		return nil, err
	}
	im.closer = f
	return im, nil
}

// imageFromPayload wraps an extracted payload; path names its bzImage.
func imageFromPayload(path string, p *Payload) (*Image, error) {
	ef, err := elf.NewFile(bytes.NewReader(p.ELF))
	if err != nil {
		return nil, fmt.Errorf("payload of %s: %w", path, err)
	}
	return newImage(path, ef, p.Compression)
}

func newImage(path string, ef *elf.File, c Compression) (*Image, error) {
	if ef.Machine != elf.EM_X86_64 {
		return nil, fmt.Errorf("image %s: %w", path, &wire.UnsupportedError{Feature: ef.Machine.String() + " code", Hint: "only x86-64 is disassembled"})
	}
	text := ef.Section(".text")
	if text == nil {
		return nil, fmt.Errorf("image %s: no .text section", path)
	}
	id, err := buildID(ef)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", path, err)
	}
	return &Image{Path: path, Compression: c, BuildID: id, TextAddr: text.Addr, elf: ef}, nil
}

// Close releases the file of a vmlinux image.
func (im *Image) Close() error {
	if im.closer != nil {
		return im.closer.Close()
	}
	return nil
}

// section returns the allocated section with contents holding addr.
func (im *Image) section(addr uint64) *elf.Section {
	for _, s := range im.elf.Sections {
		if s.Flags&elf.SHF_ALLOC != 0 && s.Type != elf.SHT_NOBITS && s.Addr <= addr && addr-s.Addr < s.Size {
			return s
		}
	}
	return nil
}

// SectionEnd returns the end address of the section holding addr, or 0.
// It bounds the approximate sizes of kallsyms (kallsymsOptions.SectionEnd).
func (im *Image) SectionEnd(addr uint64) uint64 {
	if s := im.section(addr); s != nil {
		return s.Addr + s.Size
	}
	return 0
}

// IsCode reports whether addr is in an executable section.
func (im *Image) IsCode(addr uint64) bool {
	s := im.section(addr)
	return s != nil && s.Flags&elf.SHF_EXECINSTR != 0
}

// maxFunctionBytes bounds what Code reads for one function; the largest
// x86-64 kernel functions are a few tens of KiB.
const maxFunctionBytes = 1 << 20

// Code returns the n bytes at addr, which must lie in one executable
// section.
func (im *Image) Code(addr, n uint64) ([]byte, error) {
	s := im.section(addr)
	if s == nil || s.Flags&elf.SHF_EXECINSTR == 0 {
		return nil, fmt.Errorf("address %#x is not in the image's code", addr)
	}
	if n > maxFunctionBytes {
		return nil, fmt.Errorf("%w: %d bytes of code at %#x", ErrTooLarge, n, addr)
	}
	if addr-s.Addr+n > s.Size {
		n = s.Size - (addr - s.Addr)
	}
	buf := make([]byte, n)
	if _, err := s.ReadAt(buf, int64(addr-s.Addr)); err != nil {
		return nil, fmt.Errorf("read code at %#x: %w", addr, err)
	}
	return buf, nil
}
