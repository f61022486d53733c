package kernel

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadRelease(t *testing.T) {
	dir := t.TempDir()
	got, err := ReadRelease(writeFile(t, dir, "bzImage", fakeBzImage(fakeVersion)))
	if err != nil || got != fakeRelease {
		t.Errorf("ReadRelease(fake bzImage) = %q, %v; want %q, nil", got, err, fakeRelease)
	}
	// The version string may be alone, without build information.
	got, err = ReadRelease(writeFile(t, dir, "bare", fakeBzImage("6.9.0")))
	if err != nil || got != "6.9.0" {
		t.Errorf("ReadRelease(bzImage with bare version) = %q, %v; want %q, nil", got, err, "6.9.0")
	}
}

func TestReadReleaseRejects(t *testing.T) {
	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	random := make([]byte, 64<<10)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	random[0x1FE] = 0 // no boot signature, whatever the generator says

	noHdrS := fakeBzImage(fakeVersion)
	copy(noHdrS[0x202:], "XXXX")
	noNUL := fakeBzImage(fakeVersion)
	for i := 0x300; i < len(noNUL); i++ {
		noNUL[i] = 'x'
	}
	traversal := fakeBzImage("../../etc (x) #1")

	tests := []struct {
		name     string
		path     string
		want     error
		mentions string
	}{
		{"missing", filepath.Join(dir, "nonexistent"), ErrNotFound, "does not exist"},
		{"empty", writeFile(t, dir, "empty", nil), ErrNotKernel, "empty"},
		{"text", writeFile(t, dir, "notes.txt", []byte(strings.Repeat("not a kernel\n", 100))), ErrNotKernel, "text file"},
		{"random", writeFile(t, dir, "random", random), ErrNotKernel, "0x55AA"},
		{"ELF", exe, ErrNotKernel, "an ELF file (vmlinux?): give the compressed bzImage, e.g. arch/x86/boot/bzImage"},
		{"truncated header", writeFile(t, dir, "short", fakeBzImage(fakeVersion)[:0x208]), ErrNotKernel, "too short"},
		{"version past end", writeFile(t, dir, "cut", fakeBzImage(fakeVersion)[:0x2F0]), ErrNotKernel, "past the end"},
		{"no HdrS", writeFile(t, dir, "nohdrs", noHdrS), ErrNotKernel, "HdrS"},
		{"unterminated version", writeFile(t, dir, "nonul", noNUL), ErrNotKernel, "NUL"},
		{"release with slashes", writeFile(t, dir, "traversal", traversal), ErrNotKernel, "implausible"},
		{"gzip", writeFile(t, dir, "vmlinux.gz", gzipBytes(t, []byte("x"))), ErrNotKernel, "gzip"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadRelease(tt.path)
			if !errors.Is(err, tt.want) {
				t.Fatalf("ReadRelease(%s) = %q, %v; want error wrapping %v", tt.name, got, err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.mentions) {
				t.Errorf("ReadRelease(%s) error = %q; want it to mention %q", tt.name, err, tt.mentions)
			}
		})
	}
}

func TestReadReleaseBoundsItsRead(t *testing.T) {
	// A huge file must not be read whole: only the header matters.
	dir := t.TempDir()
	p := writeFile(t, dir, "bzImage", fakeBzImage(fakeVersion))
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 40); err != nil { // sparse 1 TiB
		t.Skipf("cannot make a sparse file: %v", err)
	}
	f.Close()
	if got, err := ReadRelease(p); err != nil || got != fakeRelease {
		t.Errorf("ReadRelease(1 TiB sparse bzImage) = %q, %v; want %q, nil", got, err, fakeRelease)
	}
}

// ReadRelease returns the kernel release (what uname -r prints, e.g.
// "6.1.0-57-cloud-amd64") recorded in the setup header of the x86 bzImage
// file image: the first word of the string that the header's kernel_version
// field points to. It reads at most the first 66 KiB of the file.
//
// A file that is not a bzImage gives an error wrapping ErrNotKernel that says
// what the file looks like instead; a missing file gives ErrNotFound. A
// bzImage truncated after its header is not detected here: it fails at boot.
func ReadRelease(image string) (string, error) {
	rel, err := readRelease(image)
	if err != nil {
		return "", fmt.Errorf("%q: %w", image, err)
	}
	return rel, nil
}

func TestPayload(t *testing.T) {
	payload := []byte("\x28\xb5\x2f\xfd compressed vmlinux, then its size: \x10\x00\x00\x00")
	withPayload := func(protocol uint16, length int) []byte {
		img := fakeBzImage(fakeVersion) // setup_sects 1: protected-mode code at 0x400
		binary.LittleEndian.PutUint16(img[0x206:], protocol)
		binary.LittleEndian.PutUint32(img[0x248:], 0x10) // payload_offset
		binary.LittleEndian.PutUint32(img[0x24C:], uint32(length))
		return append(append(img, make([]byte, 0x10)...), payload...)
	}
	if got, err := Payload(withPayload(0x020F, len(payload))); err != nil || !bytes.Equal(got, payload) {
		t.Errorf("Payload = %q, %v; want %q", got, err, payload)
	}
	noHdrS := withPayload(0x020F, len(payload))
	copy(noHdrS[0x202:], "XXXX")
	for _, tc := range []struct {
		name  string
		image []byte
	}{
		{"short file", withPayload(0x020F, len(payload))[:0x240]},
		{"no HdrS", noHdrS},
		{"protocol 2.07", withPayload(0x0207, len(payload))},
		{"payload past the end", withPayload(0x020F, len(payload)+1)},
		{"no size trailer", withPayload(0x020F, 3)},
	} {
		if _, err := Payload(tc.image); !errors.Is(err, ErrNotBzImage) {
			t.Errorf("Payload(%s) = %v; want ErrNotBzImage", tc.name, err)
		}
	}
}
