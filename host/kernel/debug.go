package kernel

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"strings"

	"github.com/lpmbisect/lpmbisect/internal/cachefile"
)

// debugVmlinuxDir is where a Debian -dbg package keeps the unstripped
// kernel: usr/lib/debug/boot/vmlinux-<release>.
const debugVmlinuxDir = "usr/lib/debug/boot"

// maxDebugVmlinuxSize bounds the vmlinux extracted from a -dbg package, so
// that a hostile package cannot fill the disk. Debian's are 0.6–1.2 GB.
const maxDebugVmlinuxSize = 4 << 30

// DebugVmlinux extracts the unstripped vmlinux of a Debian debug package
// (linux-image-<release>-dbg_*.deb: usr/lib/debug/boot/vmlinux-<release>)
// into <cacheDir>/kernels/dbg-<sha256 of the .deb>/ the first time and
// returns its path and the release its name carries. Only that one file is
// written; the package's debug modules are skipped.
//
// The release is the package's word, not the file's: callers that pair the
// vmlinux with an image check the GNU build IDs.
//
// Errors wrap ErrNotFound or ErrNotKernel when the input is at fault (not a
// .deb, or a .deb without a debug vmlinux, such as the image package itself).
func DebugVmlinux(deb, cacheDir string) (vmlinux, release string, err error) {
	vmlinux, release, err = debugVmlinux(deb, cacheDir)
	if err != nil {
		return "", "", fmt.Errorf("debug package %q: %w", deb, err)
	}
	return vmlinux, release, nil
}

func debugVmlinux(deb, cacheDir string) (string, string, error) {
	if cacheDir == "" {
		return "", "", errors.New("a debug package needs a cache directory to be unpacked into")
	}
	if !isFile(deb) {
		return "", "", fmt.Errorf("%w (give a linux-image-<release>-dbg .deb)", ErrNotFound)
	}
	format, err := Sniff(deb)
	if err != nil {
		return "", "", err
	}
	if format != FormatDeb {
		return "", "", fmt.Errorf("%w: not an ar archive, so not a Debian package (give a linux-image-<release>-dbg .deb)", ErrNotKernel)
	}
	sum, err := cachefile.SHA256(deb)
	if err != nil {
		return "", "", err
	}
	root := filepath.Join(cacheDir, "kernels", "dbg-"+sum)
	if !isDir(root) {
		if err := unpackDebugVmlinuxOnce(deb, root); err != nil {
			return "", "", err
		}
	}
	return cachedDebugVmlinux(root)
}

// cachedDebugVmlinux returns the only vmlinux-<release> in root.
func cachedDebugVmlinux(root string) (string, string, error) {
	files, err := filepath.Glob(filepath.Join(root, "vmlinux-*"))
	if err != nil {
		return "", "", err
	}
	if len(files) != 1 {
		return "", "", fmt.Errorf("cache entry %s holds %d vmlinux files, expected one (delete it to unpack again)", root, len(files))
	}
	return files[0], strings.TrimPrefix(filepath.Base(files[0]), "vmlinux-"), nil
}

// unpackDebugVmlinuxOnce writes deb's debug vmlinux into the directory root
// unless another process did so first (see unpackOnce).
func unpackDebugVmlinuxOnce(deb, root string) error {
	return unpackOnce(root, func(tmp string) error {
		return readDebData(deb, func(name string, data io.Reader) error {
			return extractDebugVmlinux(name, data, tmp)
		})
	})
}

// extractDebugVmlinux writes usr/lib/debug/boot/vmlinux-<release> of the
// tar stream r (a package's data.tar, called name) to dst/vmlinux-<release>.
// It stops reading the archive once the file is written: Debian puts boot/
// before the debug modules.
func extractDebugVmlinux(name string, r io.Reader, dst string) error {
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return fmt.Errorf("%w: no %s/vmlinux-* in it (give the linux-image-<release>-dbg package)", ErrNotKernel, debugVmlinuxDir)
		}
		if err != nil {
			return fmt.Errorf("unpack %s: %w", name, err)
		}
		entry, err := entryPath(hdr.Name)
		if err != nil {
			return err
		}
		if hdr.Typeflag != tar.TypeReg || path.Dir(entry) != debugVmlinuxDir {
			continue
		}
		release, ok := strings.CutPrefix(path.Base(entry), "vmlinux-")
		if !ok {
			continue
		}
		if !validRelease(release) {
			return fmt.Errorf("%w: implausible release in %s", ErrNotKernel, entry)
		}
		if hdr.Size > maxDebugVmlinuxSize {
			return fmt.Errorf("%w: %s is %d bytes, more than the %d a kernel needs (corrupt package?)", ErrNotKernel, entry, hdr.Size, int64(maxDebugVmlinuxSize))
		}
		if err := writeEntry(filepath.Join(dst, "vmlinux-"+release), tr, 0o644); err != nil {
			return fmt.Errorf("unpack %s: %w", entry, err)
		}
		return nil
	}
}
