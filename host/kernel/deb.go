package kernel

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/klauspost/compress/zstd"

	"github.com/lpmbisect/lpmbisect/internal/cachefile"
	"github.com/lpmbisect/lpmbisect/wire"
)

// arMagic starts every ar archive, and so every .deb.
const arMagic = "!<arch>\n"

// resolveDeb unpacks a Debian kernel package into the cache (once) and
// resolves the image in it.
func resolveDeb(input, deb, cacheDir string) (*Kernel, error) {
	if cacheDir == "" {
		return nil, errors.New("a .deb needs a cache directory to be unpacked into")
	}
	sum, err := cachefile.SHA256(deb)
	if err != nil {
		return nil, err
	}
	root := filepath.Join(cacheDir, "kernels", "deb-"+sum)
	if !isDir(root) {
		if err := unpackDebOnce(deb, root); err != nil {
			return nil, err
		}
	}
	image, err := packagedImage(root)
	if err != nil {
		return nil, err
	}
	k, err := resolveImage(input, image, false)
	if err != nil {
		return nil, fmt.Errorf("%s in the package: %w", filepath.Base(image), err)
	}
	return k, nil
}

// unpackDebOnce unpacks deb's data.tar into root unless another process
// (or goroutine) did so first (see unpackOnce).
func unpackDebOnce(deb, root string) error {
	return unpackOnce(root, func(tmp string) error {
		err := readDebData(deb, func(name string, data io.Reader) error {
			if err := extractTar(data, tmp, maxUnpackedBytes); err != nil {
				return fmt.Errorf("unpack %s: %w", name, err)
			}
			return nil
		})
		if err != nil {
			return err
		}
		// Refuse to cache a package that is not a kernel (linux-headers, -dbg).
		_, err = packagedImage(tmp)
		return err
	})
}

// unpackOnce makes the cache directory root with fill unless another
// process (or goroutine) did so first. fill writes into a temporary
// directory beside root, which is then renamed into place, so root either
// does not exist or is complete.
func unpackOnce(root string, fill func(tmp string) error) error {
	parent := filepath.Dir(root)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	unlock, err := cachefile.Lock(root + ".lock")
	if err != nil {
		return err
	}
	defer unlock()
	if isDir(root) {
		return nil // made by someone else while we waited for the lock
	}
	// Holding the lock, no one else makes this entry: temporary trees
	// left by a process that died are garbage.
	tmpPrefix := "." + filepath.Base(root) + ".tmp-"
	stale, _ := filepath.Glob(filepath.Join(parent, tmpPrefix+"*"))
	for _, s := range stale {
		os.RemoveAll(s)
	}
	tmp, err := os.MkdirTemp(parent, tmpPrefix)
	if err != nil {
		return err
	}
	err = fill(tmp)
	if err == nil {
		err = os.Chmod(tmp, 0o755)
	}
	if err == nil {
		err = os.Rename(tmp, root)
		if err != nil && isDir(root) {
			// Made by a process that could not take the lock (a file
			// system without flock): the same contents, so use it.
			err = nil
		}
	}
	os.RemoveAll(tmp) // gone after a successful rename; garbage otherwise
	return err
}

// readDebData calls read with the name and the decompressed contents of
// the data.tar member of the Debian package deb.
func readDebData(deb string, read func(name string, data io.Reader) error) error {
	f, err := os.Open(deb)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	name, data, err := findDebData(f, fi.Size())
	if err != nil {
		return err
	}
	r, closeData, err := decompressor(name, bufio.NewReaderSize(data, 1<<20))
	if err != nil {
		return err
	}
	defer closeData()
	return read(name, r)
}

// findDebData returns the name and contents of the data.tar.* member of the
// ar archive f of size bytes.
func findDebData(f io.ReaderAt, size int64) (string, io.Reader, error) {
	var members []string
	off := int64(len(arMagic))
	for off+60 <= size {
		var hdr [60]byte
		if _, err := f.ReadAt(hdr[:], off); err != nil {
			return "", nil, fmt.Errorf("read ar member header at %d: %w", off, err)
		}
		if string(hdr[58:60]) != "`\n" {
			return "", nil, fmt.Errorf("%w: corrupt ar member header at offset %d (truncated .deb?)", ErrNotKernel, off)
		}
		name := strings.TrimSuffix(strings.TrimRight(string(hdr[0:16]), " "), "/")
		n, err := strconv.ParseInt(strings.TrimSpace(string(hdr[48:58])), 10, 64)
		if err != nil || n < 0 {
			return "", nil, fmt.Errorf("%w: corrupt size in ar member header %q (truncated .deb?)", ErrNotKernel, name)
		}
		off += 60
		if off+n > size {
			return "", nil, fmt.Errorf("%w: ar member %q is cut off (truncated .deb?)", ErrNotKernel, name)
		}
		if name == "data.tar" || strings.HasPrefix(name, "data.tar.") {
			return name, io.NewSectionReader(f, off, n), nil
		}
		members = append(members, name)
		off += n + n%2 // members are padded to an even offset
	}
	return "", nil, fmt.Errorf("%w: an ar archive without a data.tar member (members: %s), not a Debian package", ErrNotKernel, strings.Join(members, ", "))
}

// decompressor returns a reader of the decompressed contents of r, picked by
// the suffix of name (data.tar.xz, virtio.ko.gz, ...), and a function to
// release it.
func decompressor(name string, r io.Reader) (io.Reader, func(), error) {
	noop := func() {}
	switch ext := path.Ext(name); ext {
	case ".tar":
		return r, noop, nil
	case ".xz":
		return XZReader(name, r)
	case ".gz":
		gr, err := gzip.NewReader(r)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", name, err)
		}
		return gr, func() { gr.Close() }, nil
	case ".zst":
		zr, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", name, err)
		}
		return zr, zr.Close, nil
	default:
		return nil, nil, fmt.Errorf("%s: %w", name, &wire.UnsupportedError{Feature: strings.TrimPrefix(ext, ".") + " compression", Hint: "supported: xz, gz, zst, none"})
	}
}

// maxUnpackedBytes bounds the bytes a package's data archive unpacks to,
// headers included: Debian's kernel packages unpack to about 100 MB, their
// -dbg packages to about 1 GB. A package that claims more (a compression
// bomb) is refused before it fills the cache's disk or takes longer to
// read than such a package does.
const maxUnpackedBytes = 4 << 30

// extractTar writes the regular files and directories of the tar stream r
// below dst, and hard links whose target is below dst, reading at most
// limit bytes of the stream: headers, extended headers, skipped entries
// and files all count, so that no bomb of entries that are skipped or
// empty costs more time than limit bytes of files. Symbolic links and
// special files are skipped: the tree then holds no link that a later
// entry could be written through, and every entry name is checked to stay
// below dst, so a hostile archive cannot write outside dst.
func extractTar(r io.Reader, dst string, limit int64) error {
	budget := &budgetReader{r: r, left: limit}
	tr := tar.NewReader(budget)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if errors.Is(err, errOverBudget) {
			return fmt.Errorf("%w: the package unpacks to more than %d bytes (a compression bomb?)", ErrNotKernel, limit)
		}
		if err != nil {
			return err
		}
		// Refuse an entry the budget cannot hold before reading it, by name.
		if hdr.Size > budget.left {
			return fmt.Errorf("%w: %q makes the package unpack to more than %d bytes", ErrNotKernel, hdr.Name, limit)
		}
		name, err := entryPath(hdr.Name)
		if err != nil {
			return err
		}
		if name == "" {
			continue // the archive's root, "./"
		}
		target := filepath.Join(dst, filepath.FromSlash(name))
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := writeEntry(target, tr, fs.FileMode(hdr.Mode).Perm()); err != nil {
				return err
			}
		case tar.TypeLink:
			old, err := entryPath(hdr.Linkname)
			if err != nil || old == "" {
				return fmt.Errorf("hard link %q to %q: target outside the package", hdr.Name, hdr.Linkname)
			}
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			os.Remove(target)
			if err := os.Link(filepath.Join(dst, filepath.FromSlash(old)), target); err != nil {
				return err
			}
		}
	}
}

// errOverBudget is the error of a budgetReader that has read its bytes.
var errOverBudget = errors.New("read more than the unpack limit")

// budgetReader reads r until left bytes have been read, then fails with
// errOverBudget.
type budgetReader struct {
	r    io.Reader
	left int64
}

func (b *budgetReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errOverBudget
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

// entryPath returns the cleaned, slash-separated relative path of a tar entry
// name ("" for the root), or an error for names that leave the archive root.
func entryPath(name string) (string, error) {
	if name == "" || strings.ContainsAny(name, "\\\x00") || path.IsAbs(name) {
		return "", fmt.Errorf("unsafe entry name %q in package", name)
	}
	clean := path.Clean(name)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("unsafe entry name %q in package (leaves the package root)", name)
	}
	if clean == "." {
		return "", nil
	}
	return clean, nil
}

// writeEntry writes the contents of r to a new file at target.
func writeEntry(target string, r io.Reader, perm fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	os.Remove(target) // a later entry replaces an earlier one, as with tar(1)
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm&0o755|0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
