// Package kernel turns what a user calls "a kernel" into the files a boot
// needs: the bzImage, its release, its configuration and the modules the
// guest must load.
//
// A kernel may be given as
//
//   - a bzImage or vmlinuz file (arch/x86/boot/bzImage, /boot/vmlinuz-*);
//   - a Debian kernel package (linux-image-*.deb), unpacked into the cache in
//     pure Go (no dpkg needed);
//   - a kernel build directory (with arch/x86/boot/bzImage, .config and the
//     modules as .ko files in the tree), or a directory made by dpkg -x.
//
// The release always comes from the bzImage's own setup header, never from a
// file name, and the SHA-256 of the bzImage is the cache key for everything
// derived from the kernel.
//
// This package is the one judge of kernel inputs: Sniff tells the forms
// apart by content (Inputs lists those of a directory), BuildImage and
// BuildVmlinux know a build directory's layout, and Payload finds the code
// in a bzImage. Other packages ask it rather than read names or magic
// numbers themselves.
//
// # Modules
//
// Debian packages ship no modules.dep, so module dependencies are read from
// the "depends=" entry of each module's .modinfo ELF section and sorted so
// that dependencies load first. Modules listed in modules.builtin are built
// in and need no loading. Compressed modules (.ko.xz, .ko.gz, .ko.zst) are
// decompressed into the cache: the guest loads plain .ko files with
// finit_module and no decompression support of its own.
//
// # Cache
//
// Everything this package writes lives under <cache>/kernels:
//
//	deb-<sha256 of the .deb>/          the unpacked package (boot/, lib/modules/, usr/)
//	deb-<sha256 of the .deb>.lock      serializes unpacking between processes
//	modules/<sha256 of the file>/X.ko  a decompressed module
//
// Every entry appears atomically (written under a temporary name, then
// renamed), so several lpmbisect processes may share one cache: none ever
// sees a half-written file or a half-unpacked package, and a package is
// unpacked once. Nothing is ever modified in place; deleting the cache
// directory is always safe while no lpmbisect runs.
package kernel

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/lpmbisect/lpmbisect/internal/cachefile"
	"github.com/lpmbisect/lpmbisect/wire"
)

// Errors that tell the CLI what kind of mistake the user made. Errors from
// this package wrap them with the input and a hint; test with errors.Is.
var (
	// ErrNotFound means the given path does not exist.
	ErrNotFound = errors.New("file does not exist")
	// ErrNotKernel means the input exists but is not something a kernel can
	// be resolved from: a text file, an ELF vmlinux, random bytes, a
	// truncated header, a .deb without boot/vmlinuz-*, a directory that is
	// not a build directory.
	ErrNotKernel = errors.New("not a kernel")
	// ErrNotBzImage means a file has no x86 setup header with a payload
	// (boot protocol 2.08 or later) or no payload where the header says,
	// so the code of the kernel cannot be read from it (Payload).
	ErrNotBzImage = errors.New("not an x86 bzImage with a payload")
	// ErrModulesUnknown means nothing tells where the kernel's modules are:
	// a bare bzImage with no lib/modules/<release> beside it or on the host.
	// A caller that knows the needed drivers are built in may go on.
	ErrModulesUnknown = errors.New("kernel modules unknown")
	// ErrModuleNotFound means a module is neither built in nor present in
	// the kernel's modules directory.
	ErrModuleNotFound = errors.New("module not found")
)

// IsBadInput reports whether err says the input is not a kernel this
// package can resolve: missing, not a kernel, or in a format it does not
// read. Such errors are the user's to fix, not the host's.
func IsBadInput(err error) bool {
	return errors.Is(err, ErrNotFound) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrNotKernel) || errors.Is(err, wire.ErrNotSupported)
}

// inputHint is what Resolve accepts, for error messages.
const inputHint = "give a bzImage, a .deb or a build directory"

// Kernel is a resolved kernel: a bootable image and what belongs to it.
type Kernel struct {
	// Input is the kernel as the user gave it.
	Input string
	// Image is the absolute path of the bootable bzImage.
	Image string
	// Release is the release from the image's setup header, as uname -r
	// prints it, e.g. "6.1.0-57-cloud-amd64".
	Release string
	// SHA256 is the hex SHA-256 of Image: the cache key for everything
	// derived from this kernel.
	SHA256 string
	// ModulesDir is the root that modules.order, modules.builtin and the
	// module paths in them are relative to: lib/modules/<release> of a
	// package or the host, or the build directory. "" when unknown.
	ModulesDir string
	// ConfigPath is the kernel's .config (boot/config-<release> of a
	// package), or "" when unknown.
	ConfigPath string
}

// hostModulesRoot is where the host keeps modules; a variable for tests.
var hostModulesRoot = "/lib/modules"

// Resolve finds the bootable image, release, modules and configuration of the
// kernel given as input: a bzImage/vmlinuz file, a Debian kernel package
// (.deb) or a kernel build directory.
//
// A .deb is unpacked into <cacheDir>/kernels/deb-<sha256 of the .deb> the
// first time and reused afterwards; cacheDir is not used for other inputs.
//
// For a bzImage, modules and configuration are found where a package or a
// build puts them: <dir of image>/../lib/modules/<release> (dpkg -x layout),
// else /lib/modules/<release> on the host; <dir of image>/config-<release>;
// and the build directory when the image is its arch/x86/boot/bzImage.
//
// Errors wrap ErrNotFound, ErrNotKernel or wire.ErrNotSupported (a *wire.UnsupportedError) when the input is
// at fault.
func Resolve(input, cacheDir string) (*Kernel, error) {
	k, err := resolve(input, cacheDir)
	if err != nil {
		return nil, fmt.Errorf("kernel %q: %w", input, err)
	}
	return k, nil
}

func resolve(input, cacheDir string) (*Kernel, error) {
	fi, err := os.Stat(input)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w (%s)", ErrNotFound, inputHint)
	}
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(input)
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return resolveDir(input, abs)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: not a regular file (%s)", ErrNotKernel, inputHint)
	}
	format, err := Sniff(abs)
	if err != nil {
		return nil, err
	}
	if format == FormatDeb {
		return resolveDeb(input, abs, cacheDir)
	}
	return resolveImage(input, abs, true)
}

// resolveImage resolves a bzImage file. searchHost allows falling back to
// the host's /lib/modules/<release>.
func resolveImage(input, image string, searchHost bool) (*Kernel, error) {
	rel, err := readRelease(image)
	if err != nil {
		return nil, err
	}
	sum, err := cachefile.SHA256(image)
	if err != nil {
		return nil, err
	}
	k := &Kernel{Input: input, Image: image, Release: rel, SHA256: sum}
	dir := filepath.Dir(image)
	if root, ok := buildDirOfImage(image); ok {
		k.ModulesDir = root
		k.ConfigPath = filepath.Join(root, ".config")
		return k, nil
	}
	if d := filepath.Join(dir, "..", "lib", "modules", rel); isDir(d) {
		k.ModulesDir = filepath.Clean(d)
	} else if d := filepath.Join(hostModulesRoot, rel); searchHost && isDir(d) {
		k.ModulesDir = d
	}
	if c := filepath.Join(dir, "config-"+rel); isFile(c) {
		k.ConfigPath = c
	}
	return k, nil
}

// buildImagePath is where a build directory keeps the bootable image.
var buildImagePath = filepath.Join("arch", "x86", "boot", "bzImage")

// BuildImage returns where the kernel build directory dir (make O=) keeps
// its bootable image: dir/arch/x86/boot/bzImage.
func BuildImage(dir string) string { return filepath.Join(dir, buildImagePath) }

// buildDirOfImage returns the build directory that image is the
// arch/x86/boot/bzImage (or arch/x86_64/boot/bzImage) of, and whether it
// has a .config.
func buildDirOfImage(image string) (string, bool) {
	root, ok := buildRoot(image)
	return root, ok && isFile(filepath.Join(root, ".config"))
}

// buildRoot returns the directory that image is the arch/x86/boot/bzImage
// (or arch/x86_64/boot/bzImage) of, judging by its path alone.
func buildRoot(image string) (string, bool) {
	boot := filepath.Dir(image)
	arch := filepath.Dir(boot)
	root := filepath.Dir(filepath.Dir(arch))
	if filepath.Base(image) != "bzImage" || filepath.Base(boot) != "boot" ||
		(filepath.Base(arch) != "x86" && filepath.Base(arch) != "x86_64") ||
		filepath.Base(filepath.Dir(arch)) != "arch" {
		return "", false
	}
	return root, true
}

// BuildVmlinux returns the unstripped vmlinux that belongs to image: that
// of the build directory whose arch/x86/boot/bzImage it is, or, for an
// image kept as boot/vmlinuz-<release>, a boot/vmlinux-<release> beside
// it. "" when there is none. It goes by where the files are: a reader
// checks that the vmlinux's build ID is the image's.
func BuildVmlinux(image string) string {
	vmlinux := ""
	if root, ok := buildRoot(image); ok {
		vmlinux = filepath.Join(root, "vmlinux")
	} else if rel, ok := strings.CutPrefix(filepath.Base(image), "vmlinuz-"); ok && rel != "" {
		vmlinux = filepath.Join(filepath.Dir(image), "vmlinux-"+rel)
	}
	if vmlinux == "" || !isFile(vmlinux) {
		return ""
	}
	return vmlinux
}

// resolveDir resolves a build directory or an unpacked package tree.
func resolveDir(input, dir string) (*Kernel, error) {
	if image := BuildImage(dir); isFile(image) {
		k, err := resolveImage(input, image, false)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", buildImagePath, err)
		}
		// A build directory without .config (unusual) still has its modules.
		k.ModulesDir = dir
		return k, nil
	}
	if image, err := packagedImage(dir); err == nil {
		return resolveImage(input, image, false)
	}
	if isFile(filepath.Join(dir, ".config")) || isFile(filepath.Join(dir, "Kconfig")) {
		return nil, fmt.Errorf("%w: a kernel tree without %s (build it: make bzImage modules)", ErrNotKernel, buildImagePath)
	}
	return nil, fmt.Errorf("%w: directory is not a kernel build directory (expected %s, .config and the built modules in it, or boot/vmlinuz-* from dpkg -x; %s)", ErrNotKernel, buildImagePath, inputHint)
}

// packagedImage returns the only boot/vmlinuz-* below root.
func packagedImage(root string) (string, error) {
	images, err := filepath.Glob(filepath.Join(root, "boot", "vmlinuz-*"))
	if err != nil {
		return "", err
	}
	switch len(images) {
	case 0:
		return "", fmt.Errorf("%w: no boot/vmlinuz-* in it (give a linux-image-* package, not linux-headers-* or a -dbg package)", ErrNotKernel)
	case 1:
		return images[0], nil
	}
	return "", fmt.Errorf("%w: %d images boot/vmlinuz-* in it, expected one", ErrNotKernel, len(images))
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

func isFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

// releaseWord trims what follows the first word of s.
func releaseWord(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		return f[0]
	}
	return ""
}
