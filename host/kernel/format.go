package kernel

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// Format is the kind of kernel input a path holds, judged by its content,
// never by its name.
type Format string

// Formats of kernel inputs. Resolve accepts those IsInput names; insight
// also reads a FormatVmlinux and the FormatDeb of a -dbg package.
const (
	// FormatUnknown is anything else: text, an empty file, other bytes.
	FormatUnknown Format = ""
	// FormatBzImage is a file with an x86 setup header ("HdrS" at 0x202).
	FormatBzImage Format = "bzImage"
	// FormatDeb is an ar archive, as every Debian package is.
	FormatDeb Format = "deb"
	// FormatVmlinux is an ELF file, such as an unstripped vmlinux: not
	// bootable here, but the symbols and code of a kernel.
	FormatVmlinux Format = "vmlinux"
	// FormatBuildDir is a directory with arch/x86/boot/bzImage in it.
	FormatBuildDir Format = "build directory"
	// FormatPackageDir is a directory with boot/vmlinuz-* in it: a
	// package unpacked with dpkg -x.
	FormatPackageDir Format = "package directory"
)

// IsInput reports whether Resolve takes inputs of format f.
func (f Format) IsInput() bool {
	switch f {
	case FormatBzImage, FormatDeb, FormatBuildDir, FormatPackageDir:
		return true
	}
	return false
}

// elfMagic starts every ELF file.
const elfMagic = "\x7fELF"

// Sniff says what kind of kernel input path is, from the first bytes of a
// file (at most 0x206) or the names in a directory. It does not tell a
// working kernel from a broken one: Resolve does, and says what is wrong.
// Anything it does not recognise is FormatUnknown with a nil error; its
// errors are the file system's (a missing path wraps fs.ErrNotExist).
func Sniff(path string) (Format, error) {
	// O_NONBLOCK: opening a FIFO (a list given as <(...)) must not wait
	// for a writer; it is not a kernel and is not read here.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return FormatUnknown, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return FormatUnknown, err
	}
	if fi.IsDir() {
		return sniffDir(path), nil
	}
	if !fi.Mode().IsRegular() {
		return FormatUnknown, nil
	}
	head := make([]byte, setupHeaderMagicAt+4)
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return FormatUnknown, err
	}
	return sniffHead(head[:n]), nil
}

// sniffHead judges a file by its first bytes.
func sniffHead(head []byte) Format {
	switch {
	case bytes.HasPrefix(head, []byte(arMagic)):
		return FormatDeb
	case bytes.HasPrefix(head, []byte(elfMagic)):
		return FormatVmlinux
	case hasSetupHeader(head):
		return FormatBzImage
	}
	return FormatUnknown
}

// sniffDir judges a directory by the image in it.
func sniffDir(dir string) Format {
	if isFile(BuildImage(dir)) {
		return FormatBuildDir
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "boot", "vmlinuz-*")); len(m) > 0 {
		return FormatPackageDir
	}
	return FormatUnknown
}

// Inputs lists the names of the entries of dir that are kernel inputs
// (Sniff and Format.IsInput), in directory order.
func Inputs(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if f, err := Sniff(filepath.Join(dir, e.Name())); err == nil && f.IsInput() {
			names = append(names, e.Name())
		}
	}
	return names, nil
}
