package kernel

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"unicode/utf8"
)

// Offsets in the x86 boot sector and setup header (Documentation/arch/x86/boot.rst).
const (
	setupSectsAt        = 0x1F1 // u8 setup_sects; 0 means 4
	bootSignatureOffset = 0x1FE // u16 0xAA55, bytes 55 AA
	setupHeaderMagicAt  = 0x202 // "HdrS"
	bootProtocolAt      = 0x206 // u16 boot protocol version
	kernelVersionPtrAt  = 0x20E // u16; the string is at 0x200 + value
	setupHeaderMinSize  = 0x210 // bytes needed to read all of the above
	kernelVersionBase   = 0x200
	maxKernelVersionLen = 256
	// releaseHeadSize bounds how much of a file readRelease reads: the
	// kernel_version pointer is a u16, so the string starts before 0x10200.
	releaseHeadSize = kernelVersionBase + 0xFFFF + maxKernelVersionLen
	// maxReleaseLen is the size of utsname.release in the kernel minus its NUL.
	maxReleaseLen = 64

	payloadOffsetAt  = 0x248 // u32, from the start of protected-mode code
	payloadLengthAt  = 0x24C // u32
	payloadHeaderEnd = 0x250 // bytes needed to find the payload
	// minPayloadProtocol is the boot protocol that added payload_offset
	// and payload_length (Linux 2.6.30).
	minPayloadProtocol = 0x0208
)

// Payload returns the compressed payload of an x86 bzImage (the whole
// file, in memory): the vmlinux the image decompresses at boot, followed by
// the 4-byte size trailer the kernel build appends. Requires boot protocol
// 2.08 (Linux 2.6.30). Errors wrap ErrNotBzImage.
func Payload(image []byte) ([]byte, error) {
	if len(image) < payloadHeaderEnd {
		return nil, fmt.Errorf("%w: %d bytes is too short for a setup header", ErrNotBzImage, len(image))
	}
	if !hasSetupHeader(image) {
		return nil, fmt.Errorf("%w: no \"HdrS\" setup header at %#x", ErrNotBzImage, setupHeaderMagicAt)
	}
	if proto := binary.LittleEndian.Uint16(image[bootProtocolAt:]); proto < minPayloadProtocol {
		return nil, fmt.Errorf("%w: boot protocol %#04x has no payload fields (2.08 needed)", ErrNotBzImage, proto)
	}
	setupSects := int(image[setupSectsAt])
	if setupSects == 0 {
		setupSects = 4
	}
	base := uint64(setupSects+1) * 512
	off := base + uint64(binary.LittleEndian.Uint32(image[payloadOffsetAt:]))
	n := uint64(binary.LittleEndian.Uint32(image[payloadLengthAt:]))
	if n < 4 || off+n > uint64(len(image)) {
		return nil, fmt.Errorf("%w: payload of %d bytes at %#x does not fit in the %d-byte file (truncated image?)", ErrNotBzImage, n, off, len(image))
	}
	return image[off : off+n], nil
}

// readRelease returns the kernel release (what uname -r prints, e.g.
// "6.1.0-57-cloud-amd64") recorded in the setup header of the x86 bzImage
// at path: the first word of the string that the header's kernel_version
// field points to. It reads at most the first 66 KiB of the file, and
// leaves the path out of its errors so that callers can name the input the
// user gave. A file that is not a bzImage gives an error wrapping
// ErrNotKernel that says what the file looks like instead; a missing file
// gives ErrNotFound. A bzImage truncated after its header is not detected
// here: it fails at boot.
func readRelease(path string) (string, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", ErrNotFound
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	head := make([]byte, releaseHeadSize)
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return "", fmt.Errorf("read: %w", err)
	}
	return releaseFromHeader(head[:n])
}

// releaseFromHeader parses the start of a bzImage (up to releaseHeadSize bytes).
func releaseFromHeader(head []byte) (string, error) {
	if what := identifyNonImage(head); what != "" {
		return "", fmt.Errorf("%w: %s", ErrNotKernel, what)
	}
	if len(head) < setupHeaderMinSize {
		return "", fmt.Errorf("%w: %d bytes is too short for a bzImage header (truncated file?)", ErrNotKernel, len(head))
	}
	if head[bootSignatureOffset] != 0x55 || head[bootSignatureOffset+1] != 0xAA {
		return "", fmt.Errorf("%w: no x86 boot sector signature 0x55AA at offset 0x1FE (give a bzImage, a .deb or a build directory)", ErrNotKernel)
	}
	if !hasSetupHeader(head) {
		return "", fmt.Errorf("%w: an x86 boot sector without a Linux setup header (\"HdrS\" at 0x202): not a Linux bzImage", ErrNotKernel)
	}
	if proto := binary.LittleEndian.Uint16(head[bootProtocolAt:]); proto < 0x0200 {
		return "", fmt.Errorf("%w: boot protocol %#04x predates the kernel_version field (kernel too old)", ErrNotKernel, proto)
	}
	ptr := binary.LittleEndian.Uint16(head[kernelVersionPtrAt:])
	if ptr == 0 {
		return "", fmt.Errorf("%w: setup header has no kernel_version string", ErrNotKernel)
	}
	start := kernelVersionBase + int(ptr)
	if start >= len(head) {
		return "", fmt.Errorf("%w: kernel_version points to offset %#x, past the end of the file (truncated file?)", ErrNotKernel, start)
	}
	s := head[start:min(len(head), start+maxKernelVersionLen)]
	end := bytes.IndexByte(s, 0)
	if end < 0 {
		return "", fmt.Errorf("%w: kernel_version string at offset %#x is not NUL-terminated within %d bytes (truncated or corrupt header)", ErrNotKernel, start, maxKernelVersionLen)
	}
	fields := bytes.Fields(s[:end])
	if len(fields) == 0 {
		return "", fmt.Errorf("%w: empty kernel_version string at offset %#x", ErrNotKernel, start)
	}
	rel := string(fields[0])
	if !validRelease(rel) {
		return "", fmt.Errorf("%w: implausible release %q in kernel_version at offset %#x (corrupt header?)", ErrNotKernel, rel, start)
	}
	return rel, nil
}

// hasSetupHeader reports whether head, the start of a file, holds the
// "HdrS" magic of an x86 setup header.
func hasSetupHeader(head []byte) bool {
	return len(head) >= setupHeaderMagicAt+4 && string(head[setupHeaderMagicAt:setupHeaderMagicAt+4]) == "HdrS"
}

// validRelease reports whether rel can be a uname release. Releases become
// path elements (lib/modules/<release>), so this also rejects anything that
// could escape a directory.
func validRelease(rel string) bool {
	if rel == "" || len(rel) > maxReleaseLen || rel == "." || rel == ".." {
		return false
	}
	for _, c := range []byte(rel) {
		if c <= ' ' || c >= 0x7F || c == '/' || c == '\\' {
			return false
		}
	}
	return true
}

// identifyNonImage names well-known file kinds that are not bzImages, with
// what to give instead, or returns "".
func identifyNonImage(head []byte) string {
	switch {
	case len(head) == 0:
		return "an empty file"
	case bytes.HasPrefix(head, []byte(elfMagic)):
		return "an ELF file (vmlinux?): give the compressed bzImage, e.g. arch/x86/boot/bzImage"
	case bytes.HasPrefix(head, []byte(arMagic)):
		return "an ar archive (a Debian package?) where a bzImage was expected"
	case bytes.HasPrefix(head, []byte{0x1F, 0x8B}):
		return "gzip-compressed data, not an x86 bzImage (decompress it, or give the bzImage)"
	case bytes.HasPrefix(head, []byte{0xFD, '7', 'z', 'X', 'Z', 0}):
		return "xz-compressed data, not an x86 bzImage (decompress it, or give the bzImage)"
	case bytes.HasPrefix(head, []byte{0x28, 0xB5, 0x2F, 0xFD}):
		return "zstd-compressed data, not an x86 bzImage (decompress it, or give the bzImage)"
	case len(head) >= 0x40 && string(head[0x38:0x3C]) == "ARM\x64":
		return "an arm64 kernel Image; lpmbisect boots x86-64 bzImages"
	case looksLikeText(head):
		return "a text file (give a bzImage, a .deb or a build directory)"
	}
	return ""
}

// looksLikeText reports whether the first bytes of a file are printable UTF-8.
func looksLikeText(head []byte) bool {
	b := head[:min(len(head), 512)]
	// The cut may have split a multi-byte rune: drop up to 3 trailing bytes.
	for i := 0; i < utf8.UTFMax-1 && len(b) > 0 && !utf8.Valid(b); i++ {
		b = b[:len(b)-1]
	}
	if !utf8.Valid(b) {
		return false
	}
	for _, r := range string(b) {
		if r < ' ' && r != '\n' && r != '\r' && r != '\t' && r != '\f' {
			return false
		}
	}
	return true
}
