package insight

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/ulikunitz/xz"

	"github.com/lpmbisect/lpmbisect/host/kernel"
	"github.com/lpmbisect/lpmbisect/testbed/testkernels"
	"github.com/lpmbisect/lpmbisect/wire"
)

// TestReadPayloadDebian extracts the vmlinux ELF of the two Debian
// images: lz4 legacy frames (6.1) and zstd (6.12).
func TestReadPayloadDebian(t *testing.T) {
	for _, tc := range []struct {
		pkg     string
		kind    Compression
		buildID string
	}{
		{testkernels.Debian61, CompressionLZ4, buildID61},
		{testkernels.Debian612, CompressionZstd, buildID612},
	} {
		t.Run(tc.pkg, func(t *testing.T) {
			image := debianImage(t, tc.pkg)
			p, err := ReadPayload(image)
			if err != nil {
				t.Fatalf("ReadPayload(%s) = %v", image, err)
			}
			t.Logf("%s: %s, %d bytes decompressed in %v", tc.pkg, p.Compression, len(p.ELF), p.Took)
			if p.Compression != tc.kind || p.BuildID != tc.buildID {
				t.Errorf("ReadPayload(%s) = %s payload with build ID %s; want %s with %s", image, p.Compression, p.BuildID, tc.kind, tc.buildID)
			}
			im, err := imageFromPayload(image, p)
			if err != nil {
				t.Fatal(err)
			}
			if im.TextAddr != x86TextAddr {
				t.Errorf("payload .text at %#x; want %#x", im.TextAddr, uint64(x86TextAddr))
			}
			// The payload is stripped: it is code, not a symbol source.
			elfPath := filepath.Join(t.TempDir(), "payload.elf")
			if err := os.WriteFile(elfPath, p.ELF, 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := readVmlinux(elfPath); !errors.Is(err, ErrNoSymbols) {
				t.Errorf("ReadVmlinux(payload) = %v; want ErrNoSymbols", err)
			}
			// The payload extracted once (a PVH boot's ELF) is the same
			// image, compression included, without decompressing again.
			again, err := openPayloadELF(image, elfPath)
			if err != nil {
				t.Fatal(err)
			}
			defer again.Close()
			if again.Path != image || again.Compression != tc.kind || again.BuildID != tc.buildID || again.TextAddr != im.TextAddr {
				t.Errorf("openPayloadELF = %s, %s, %s, %#x; want %s, %s, %s, %#x", again.Path, again.Compression, again.BuildID, again.TextAddr,
					image, tc.kind, tc.buildID, im.TextAddr)
			}
		})
	}
}

// fakeBzImage wraps payload in a minimal setup header (boot protocol
// 2.15, one setup sector, the payload 0x100 bytes into protected-mode code).
func fakeBzImage(payload []byte, protocol uint16) []byte {
	const setupSects, payloadOffset = 1, 0x100
	img := make([]byte, (setupSects+1)*512+payloadOffset)
	img[0x1F1] = setupSects // setup_sects
	copy(img[0x202:], "HdrS")
	binary.LittleEndian.PutUint16(img[0x206:], protocol)
	binary.LittleEndian.PutUint32(img[0x248:], payloadOffset) // payload_offset
	binary.LittleEndian.PutUint32(img[0x24C:], uint32(len(payload)))
	return append(img, payload...)
}

// withSize appends the kernel build's size trailer (size_append).
func withSize(compressed []byte, size int) []byte {
	return binary.LittleEndian.AppendUint32(compressed, uint32(size))
}

func testELFBytes(t testing.TB) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "vmlinux")
	code := bytes.Repeat([]byte{0x90}, 4096)
	writeTestELF(t, path, code, x86TextAddr, []byte{0xde, 0xad, 0xbe, 0xef}, []testSym{{Name: "f", Size: 16, Global: true}})
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestExtractPayloadFormats(t *testing.T) {
	vmlinux := testELFBytes(t)
	compress := map[Compression]func() []byte{
		CompressionNone: func() []byte { return vmlinux },
		CompressionGzip: func() []byte {
			var b bytes.Buffer
			w := gzip.NewWriter(&b)
			w.Write(vmlinux)
			w.Close()
			return b.Bytes() // gzip's own ISIZE is the trailer
		},
		CompressionZstd: func() []byte {
			w, _ := zstd.NewWriter(nil)
			return withSize(w.EncodeAll(vmlinux, nil), len(vmlinux))
		},
		CompressionLZ4: func() []byte {
			var b bytes.Buffer
			w := lz4.NewWriter(&b)
			if err := w.Apply(lz4.LegacyOption(true)); err != nil {
				t.Fatal(err)
			}
			w.Write(vmlinux)
			w.Close()
			return withSize(b.Bytes(), len(vmlinux))
		},
		CompressionXZ: func() []byte {
			var b bytes.Buffer
			w, _ := xz.NewWriter(&b)
			w.Write(vmlinux)
			w.Close()
			return withSize(b.Bytes(), len(vmlinux))
		},
	}
	for kind, payload := range compress {
		p, err := extractPayload(fakeBzImage(payload(), 0x020f))
		if err != nil {
			t.Errorf("ExtractPayload(%s payload) = %v", kind, err)
			continue
		}
		if p.Compression != kind || !bytes.Equal(p.ELF, vmlinux) || p.BuildID != "deadbeef" {
			t.Errorf("ExtractPayload(%s payload) = %s, %d bytes, build ID %q; want %s, the %d bytes compressed, deadbeef",
				kind, p.Compression, len(p.ELF), p.BuildID, kind, len(vmlinux))
		}
		if p.PVHEntry {
			t.Errorf("ExtractPayload(%s payload).PVHEntry = true; want false (a GNU build ID note only)", kind)
		}
	}
}

// TestExtractPayloadXZWithBCJ: the kernel's xz payloads carry the x86 BCJ
// filter (scripts/xz_wrap.sh), which the xz command decodes; without it
// (github.com/ulikunitz/xz has no BCJ) the payload is unsupported.
func TestExtractPayloadXZWithBCJ(t *testing.T) {
	if _, err := exec.LookPath("xz"); err != nil {
		t.Skip("no xz command to make a BCJ stream with")
	}
	vmlinux := testELFBytes(t)
	image := fakeBzImage(withSize(xzBCJ(t, vmlinux), len(vmlinux)), 0x020f)
	p, err := extractPayload(image)
	if err != nil || p.Compression != CompressionXZ || !bytes.Equal(p.ELF, vmlinux) {
		t.Fatalf("ExtractPayload(xz --x86 payload) = %v; want the %d bytes compressed", err, len(vmlinux))
	}
	t.Setenv("PATH", t.TempDir()) // no xz command: the Go decoder alone
	_, err = extractPayload(image)
	if !errors.Is(err, wire.ErrNotSupported) || !strings.Contains(err.Error(), "xz-utils") {
		t.Errorf("ExtractPayload(xz --x86 payload) without the xz command = %v; want wire.ErrNotSupported naming xz-utils", err)
	}
}

// xzBCJ compresses data as the kernel's scripts/xz_wrap.sh does for x86:
// an xz stream with CRC32, the x86 BCJ filter and LZMA2.
func xzBCJ(t testing.TB, data []byte) []byte {
	t.Helper()
	cmd := exec.Command("xz", "--format=xz", "--check=crc32", "--x86", "--lzma2=dict=1MiB", "--stdout")
	cmd.Stdin = bytes.NewReader(data)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestExtractPayloadRejects(t *testing.T) {
	vmlinux := testELFBytes(t)
	zw, _ := zstd.NewWriter(nil)
	zstdPayload := zw.EncodeAll(vmlinux, nil)
	var lz4Payload bytes.Buffer
	lw := lz4.NewWriter(&lz4Payload)
	lw.Apply(lz4.LegacyOption(true))
	lw.Write(vmlinux)
	lw.Close()
	good := fakeBzImage(withSize(zstdPayload, len(vmlinux)), 0x020f)

	for _, tc := range []struct {
		name  string
		image []byte
		want  error
	}{
		{"short file", good[:0x240], kernel.ErrNotBzImage},
		{"no header magic", append(make([]byte, 0x202), make([]byte, 0x100)...), kernel.ErrNotBzImage},
		{"protocol 2.07", fakeBzImage(withSize(zstdPayload, len(vmlinux)), 0x0207), kernel.ErrNotBzImage},
		{"truncated payload", good[:len(good)-10], kernel.ErrNotBzImage},
		{"unknown compression", fakeBzImage([]byte("\x00\x01\x02\x03\x04\x05\x06\x07"), 0x020f), kernel.ErrNotBzImage},
		{"bzip2", fakeBzImage(withSize([]byte("BZh91AY&SY"), 100), 0x020f), wire.ErrNotSupported},
		{"trailer above the bound", fakeBzImage(withSize(zstdPayload, maxPayloadSize+1), 0x020f), ErrPayloadTooLarge},
		{"zstd output above the trailer", fakeBzImage(withSize(zstdPayload, len(vmlinux)-1), 0x020f), ErrPayloadTooLarge},
		{"lz4 output above the trailer", fakeBzImage(withSize(lz4Payload.Bytes(), 100), 0x020f), ErrPayloadTooLarge},
	} {
		if _, err := extractPayload(tc.image); !errors.Is(err, tc.want) {
			t.Errorf("ExtractPayload(%s) = %v; want %v", tc.name, err, tc.want)
		}
	}
	// Output short of the trailer is corrupt, not too large.
	_, err := extractPayload(fakeBzImage(withSize(zstdPayload, len(vmlinux)+1), 0x020f))
	if err == nil || errors.Is(err, ErrPayloadTooLarge) {
		t.Errorf("ExtractPayload(zstd output short of the trailer) = %v; want a corrupt-image error", err)
	}
}
