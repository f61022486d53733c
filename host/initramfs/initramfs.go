// Package initramfs packs the guest program, and the kernel modules it must
// load, into a cpio archive that a kernel unpacks as its root filesystem.
//
// Archives are content-addressed: the cache key is the SHA-256 of the guest
// binary and of every module (name and bytes), so an unchanged guest and
// module set is never packed twice, and a changed one can never be served a
// stale archive. Packing uses u-root's mkuimage with a prebuilt static binary,
// so no Go toolchain is needed at run time.
//
// Layout of an archive:
//
//	/init                                 → /bin/lpmbisect-guest
//	/bin/lpmbisect-guest                  the guest program (static)
//	/lib/modules/lpmbisect/NN-name.ko     modules, uncompressed
//	/lib/modules/lpmbisect/load-order     their paths, dependencies first
//	/lib/lpmbisect/workload/…             a user's BPF object and inputs (Spec.Files)
//	/dev/console, /dev/null, /tmp, …      mkuimage's default ramfs
//
// The module directory and the load-order file are the guest's contract
// (wire.ModuleDir, wire.LoadOrderFile).
package initramfs

import (
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/u-root/mkuimage/uimage"
	"github.com/u-root/uio/llog"

	"github.com/lpmbisect/lpmbisect/internal/cachefile"
	"github.com/lpmbisect/lpmbisect/wire"
)

// guestName is the file name of the guest program, on the host and in the
// archive.
const guestName = "lpmbisect-guest"

// formatVersion changes whenever the archive layout changes, so archives
// cached by an older lpmbisect are not reused.
const formatVersion = "lpmbisect-initramfs-1"

// Module is a kernel module to pack, in load order.
type Module struct {
	Name string // module name, e.g. virtio_pci
	Path string // uncompressed .ko on the host
}

// Spec says what goes into an archive.
type Spec struct {
	Guest   string   // static guest binary on the host
	Modules []Module // in load order, dependencies first
	// Files are further files for the guest, such as a user's BPF
	// object and its inputs (wire.WorkloadObject).
	Files []File
}

// File is a host file packed at an absolute path of the archive.
type File struct {
	Host, Archive string
}

// Image is a packed archive.
type Image struct {
	Path   string // the cpio file in the cache
	Key    string // content hash (hex)
	Cached bool   // true when an existing archive was reused
}

// Build returns the archive for spec from cacheDir/initramfs, packing it
// first if no archive with the same content exists. It is safe for several
// processes sharing cacheDir: packing is serialised by a lock file and the
// archive appears by an atomic rename, so a reader never sees half of one.
func Build(spec Spec, cacheDir string) (*Image, error) {
	if err := checkStatic(spec.Guest); err != nil {
		return nil, err
	}
	key, err := contentKey(spec)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(cacheDir, "initramfs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create initramfs cache: %w (set LPMBISECT_CACHE to a writable directory)", err)
	}
	img := &Image{Path: filepath.Join(dir, key+".cpio"), Key: key}
	if _, err := os.Stat(img.Path); err == nil {
		img.Cached = true
		return img, nil
	}

	unlock, err := cachefile.Lock(filepath.Join(dir, key+".lock"))
	if err != nil {
		return nil, fmt.Errorf("initramfs cache: %w", err)
	}
	defer unlock()
	if _, err := os.Stat(img.Path); err == nil { // packed while we waited
		img.Cached = true
		return img, nil
	}
	if err := pack(spec, img.Path); err != nil {
		return nil, err
	}
	return img, nil
}

func pack(spec Spec, out string) error {
	tmp, err := os.MkdirTemp(filepath.Dir(out), "pack-")
	if err != nil {
		return fmt.Errorf("pack initramfs: %w", err)
	}
	defer os.RemoveAll(tmp)

	files := []string{spec.Guest + ":bin/" + guestName}
	var order strings.Builder
	for i, m := range spec.Modules {
		inArchive := fmt.Sprintf("%s/%02d-%s.ko", wire.ModuleDir, i, m.Name)
		files = append(files, m.Path+":"+strings.TrimPrefix(inArchive, "/"))
		order.WriteString(inArchive + "\n")
	}
	for _, f := range spec.Files {
		files = append(files, f.Host+":"+strings.TrimPrefix(f.Archive, "/"))
	}
	if len(spec.Modules) > 0 {
		list := filepath.Join(tmp, path.Base(wire.LoadOrderFile))
		if err := os.WriteFile(list, []byte(order.String()), 0o644); err != nil {
			return fmt.Errorf("pack initramfs: %w", err)
		}
		files = append(files, list+":"+strings.TrimPrefix(wire.LoadOrderFile, "/"))
	}
	work := filepath.Join(tmp, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		return fmt.Errorf("pack initramfs: %w", err)
	}
	partial := filepath.Join(tmp, "out.cpio")
	l := llog.New(slog.LevelWarn, func(string, ...any) {}) // mkuimage's chatter is not ours
	err = uimage.Create(l,
		uimage.WithTempDir(work),
		uimage.WithCPIOOutput(partial),
		uimage.WithBaseArchive(uimage.DefaultRamfs()),
		uimage.WithFiles(files...),
		uimage.WithInit("/bin/"+guestName),
		uimage.WithSkipLDD(),
	)
	if err != nil {
		return fmt.Errorf("pack initramfs with mkuimage: %w", err)
	}
	if err := syncFile(partial); err != nil {
		return fmt.Errorf("pack initramfs: %w", err)
	}
	if err := os.Rename(partial, out); err != nil {
		return fmt.Errorf("pack initramfs: %w", err)
	}
	return nil
}

// contentKey hashes everything that ends up in the archive.
func contentKey(spec Spec) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n", formatVersion)
	if err := hashFile(h, spec.Guest); err != nil {
		return "", fmt.Errorf("read guest binary: %w", err)
	}
	for _, m := range spec.Modules {
		fmt.Fprintf(h, "module %s\n", m.Name)
		if err := hashFile(h, m.Path); err != nil {
			return "", fmt.Errorf("read module %s: %w", m.Name, err)
		}
	}
	for _, f := range spec.Files {
		fmt.Fprintf(h, "file %s\n", f.Archive)
		if err := hashFile(h, f.Host); err != nil {
			return "", fmt.Errorf("read %s: %w", f.Host, err)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func hashFile(h io.Writer, path string) error {
	sum, err := cachefile.SHA256(path)
	if err != nil {
		return err
	}
	fmt.Fprintf(h, "%s\n", sum)
	return nil
}

// checkStatic refuses a guest that needs a dynamic loader: the archive holds
// no libc.
func checkStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("guest binary %s: %w (build it with: CGO_ENABLED=0 go build -o bin/ ./cmd/...)", path, err)
		}
		return fmt.Errorf("guest binary %s is not an ELF executable: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("guest binary %s is dynamically linked (rebuild it with CGO_ENABLED=0)", path)
		}
	}
	if f.Machine != elf.EM_X86_64 {
		return fmt.Errorf("guest binary %s is built for %v, want x86-64 (set GOARCH=amd64)", path, f.Machine)
	}
	return nil
}

func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// FindGuest locates the guest binary: the LPMBISECT_GUEST environment
// variable, else lpmbisect-guest beside the running executable (where
// `go build -o bin/ ./cmd/...` puts both).
func FindGuest() (string, error) {
	if p := os.Getenv("LPMBISECT_GUEST"); p != "" {
		return p, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find guest binary: %w (set LPMBISECT_GUEST)", err)
	}
	p := filepath.Join(filepath.Dir(exe), guestName)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("find guest binary: no %s beside %s (build both with: CGO_ENABLED=0 go build -o bin/ ./cmd/..., or set LPMBISECT_GUEST)", guestName, exe)
	}
	return p, nil
}
