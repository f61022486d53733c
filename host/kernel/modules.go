package kernel

import (
	"bufio"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/lpmbisect/lpmbisect/internal/cachefile"
)

// Module is a loadable kernel module, ready to be put into an initramfs.
type Module struct {
	// Name is the module's name as the kernel knows it, with underscores
	// where the file name may have dashes, e.g. "virtio_pci".
	Name string
	// Path is the uncompressed .ko on the host: in the kernel's modules
	// directory, or in the cache when the kernel ships compressed modules.
	Path string
}

// channelDrivers are the drivers behind the virtio-serial port that carries
// results out of the guest, with their configuration symbols.
var channelDrivers = []struct{ module, config string }{
	{"virtio_pci", "CONFIG_VIRTIO_PCI"},
	{"virtio_console", "CONFIG_VIRTIO_CONSOLE"},
}

// ChannelModules returns the modules the guest must load, in load order, to
// get the virtio-serial port that carries results: virtio_pci and
// virtio_console and their dependencies. It is empty, not an error, when
// both drivers are built in. Compressed modules are decompressed into
// cacheDir.
//
// When the modules directory is unknown or lacks the drivers, the kernel's
// configuration decides: both drivers =y means nothing to load. Otherwise
// the error wraps ErrModulesUnknown or ErrModuleNotFound.
func (k *Kernel) ChannelModules(cacheDir string) ([]Module, error) {
	names := make([]string, len(channelDrivers))
	for i, d := range channelDrivers {
		names[i] = d.module
	}
	mods, err := k.ModulesFor(cacheDir, names...)
	if err == nil || k.ConfigPath == "" ||
		!(errors.Is(err, ErrModulesUnknown) || errors.Is(err, ErrModuleNotFound)) {
		return mods, err
	}
	for _, d := range channelDrivers {
		v, cerr := configValue(k.ConfigPath, d.config)
		if cerr != nil {
			return nil, errors.Join(err, cerr)
		}
		switch v {
		case "y":
			continue
		case "m":
			return nil, err
		default:
			return nil, fmt.Errorf("%w; %s is not set in %s (the guest cannot report results: set it to y)", err, d.config, k.ConfigPath)
		}
	}
	return nil, nil
}

// ModulesFor returns the modules to load, in load order (dependencies
// first), so that the modules with the given names work. Names may use
// dashes or underscores. Built-in modules (modules.builtin) are left out, so
// the result is empty when all are built in. Dependencies come from the
// "depends=" entry of each module's .modinfo section; every module's
// vermagic must match the kernel's release.
//
// Compressed modules (.ko.xz, .ko.gz, .ko.zst) are decompressed into
// <cacheDir>/kernels/modules; plain .ko files are returned where they are.
func (k *Kernel) ModulesFor(cacheDir string, names ...string) ([]Module, error) {
	if k.ModulesDir == "" {
		return nil, fmt.Errorf("kernel %q: modules %s: %w (no lib/modules/%s beside the image or on the host: give the .deb or the build directory, or build them in)",
			k.displayName(), strings.Join(names, ", "), ErrModulesUnknown, k.Release)
	}
	idx, err := readModuleIndex(k.ModulesDir)
	if err != nil {
		return nil, fmt.Errorf("kernel %q: %w", k.displayName(), err)
	}
	s := &moduleSorter{idx: idx, cacheDir: cacheDir, release: k.Release, state: map[string]visitState{}}
	for _, n := range names {
		if err := s.visit(moduleName(n), ""); err != nil {
			return nil, fmt.Errorf("kernel %q: %w", k.displayName(), err)
		}
	}
	return s.order, nil
}

// displayName names the kernel in errors: as the user gave it, if known.
func (k *Kernel) displayName() string {
	if k.Input != "" {
		return k.Input
	}
	return k.Image
}

// moduleName returns the kernel's name for a module given by name or file
// name: "virtio-pci", "virtio_pci.ko.xz" and "virtio_pci" are all "virtio_pci".
func moduleName(s string) string {
	base, _ := trimModuleExt(filepath.Base(s))
	return strings.ReplaceAll(base, "-", "_")
}

// moduleExts are the file name endings of modules, as installed or built.
var moduleExts = []string{".ko", ".ko.xz", ".ko.zst", ".ko.gz"}

// listedExts are the endings of entries in modules.order: build trees list
// .o files since Linux 6.2.
var listedExts = append(moduleExts[:len(moduleExts):len(moduleExts)], ".o")

// trimModuleExt strips a module ending (.ko, .ko.xz, ...; also .o, which
// modules.order lists in build trees since Linux 6.2) and reports whether
// there was one.
func trimModuleExt(s string) (string, bool) {
	for _, ext := range listedExts {
		if strings.HasSuffix(s, ext) {
			return strings.TrimSuffix(s, ext), true
		}
	}
	return s, false
}

// moduleIndex finds modules in a modules directory.
type moduleIndex struct {
	root string
	// builtin holds the names in modules.builtin.
	builtin map[string]bool
	// listed maps module names to their paths in modules.order, relative to
	// root and without the file ending.
	listed map[string]string
	// files maps module names to files found by walking root; nil until a
	// module is missing from modules.order.
	files map[string]string
}

func readModuleIndex(root string) (*moduleIndex, error) {
	idx := &moduleIndex{root: root, builtin: map[string]bool{}, listed: map[string]string{}}
	err := eachLine(filepath.Join(root, "modules.builtin"), func(line string) {
		idx.builtin[moduleName(line)] = true
	})
	if err != nil {
		return nil, err
	}
	err = eachLine(filepath.Join(root, "modules.order"), func(line string) {
		if rel, ok := trimModuleExt(line); ok {
			if name := moduleName(line); idx.listed[name] == "" {
				idx.listed[name] = rel
			}
		}
	})
	if err != nil {
		return nil, err
	}
	return idx, nil
}

// eachLine calls fn with each non-empty line of a file; a missing file has
// no lines.
func eachLine(path string, fn func(string)) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			fn(line)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}

// find returns the file of the module name, or "" if there is none.
// modules.order may say .ko where the installed file is .ko.xz.
func (idx *moduleIndex) find(name string) (string, error) {
	if rel, ok := idx.listed[name]; ok {
		for _, ext := range moduleExts {
			if p := filepath.Join(idx.root, filepath.FromSlash(rel)+ext); isFile(p) {
				return p, nil
			}
		}
	}
	if idx.files == nil {
		idx.files = map[string]string{}
		err := filepath.WalkDir(idx.root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == ".git" {
				return filepath.SkipDir
			}
			if d.Type().IsRegular() {
				if _, ok := trimModuleExt(d.Name()); ok && !strings.HasSuffix(d.Name(), ".o") {
					if n := moduleName(d.Name()); idx.files[n] == "" {
						idx.files[n] = p
					}
				}
			}
			return nil
		})
		if err != nil {
			return "", fmt.Errorf("look for modules: %w", err)
		}
	}
	return idx.files[name], nil
}

type visitState int

const (
	unvisited visitState = iota
	visiting
	visited
)

// moduleSorter orders modules so that dependencies come first (a depth-first
// topological sort).
type moduleSorter struct {
	idx      *moduleIndex
	cacheDir string
	release  string
	state    map[string]visitState
	path     []string // the modules being visited, for cycle errors
	order    []Module
}

func (s *moduleSorter) visit(name, neededBy string) error {
	if s.idx.builtin[name] {
		return nil
	}
	switch s.state[name] {
	case visited:
		return nil
	case visiting:
		return fmt.Errorf("module dependency cycle %s → %s (corrupt modules?)", strings.Join(s.path, " → "), name)
	}
	what := fmt.Sprintf("module %q", name)
	if neededBy != "" {
		what = fmt.Sprintf("module %q (needed by %q)", name, neededBy)
	}
	file, err := s.idx.find(name)
	if err != nil {
		return err
	}
	if file == "" {
		return fmt.Errorf("%s: %w: neither built in (modules.builtin) nor under %s (is it enabled in the kernel configuration?)", what, ErrModuleNotFound, s.idx.root)
	}
	ko, err := s.uncompressed(file)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	info, err := readModinfo(ko)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if rel := releaseWord(info.vermagic); rel != "" && rel != s.release {
		return fmt.Errorf("%s: %w: %s is built for release %s, the kernel is %s (stale modules? build them with the image: make bzImage modules)",
			what, ErrModuleNotFound, file, rel, s.release)
	}
	s.state[name] = visiting
	s.path = append(s.path, name)
	for _, dep := range info.depends {
		if err := s.visit(moduleName(dep), name); err != nil {
			return err
		}
	}
	s.path = s.path[:len(s.path)-1]
	s.state[name] = visited
	s.order = append(s.order, Module{Name: name, Path: ko})
	return nil
}

// uncompressed returns file itself if it is a plain .ko, or its decompressed
// copy in the cache, made on first use. The copy is named by the SHA-256 of
// the compressed file, so it is never stale.
func (s *moduleSorter) uncompressed(file string) (string, error) {
	if strings.HasSuffix(file, ".ko") {
		return file, nil
	}
	if s.cacheDir == "" {
		return "", fmt.Errorf("%s is compressed and no cache directory was given to decompress it into", file)
	}
	sum, err := cachefile.SHA256(file)
	if err != nil {
		return "", err
	}
	base, _ := trimModuleExt(filepath.Base(file))
	dst := filepath.Join(s.cacheDir, "kernels", "modules", sum, base+".ko")
	if isFile(dst) {
		return dst, nil
	}
	in, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer in.Close()
	r, closeR, err := decompressor(file, bufio.NewReader(in))
	if err != nil {
		return "", err
	}
	defer closeR()
	err = cachefile.WriteAtomic(dst, func(w io.Writer) error {
		_, err := io.Copy(w, r)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("decompress %s: %w", file, err)
	}
	return dst, nil
}

// modinfo is what a module says about itself in its .modinfo section.
type modinfo struct {
	depends  []string // names of modules it needs
	vermagic string   // "<release> SMP preempt mod_unload ..."
}

// maxModinfoBytes bounds what is read of a module's .modinfo: Debian's
// modules carry a few hundred bytes. The section's header says its size,
// and a compressed or empty (SHT_NOBITS) section is not bounded by the
// file's, so a few hundred bytes could claim terabytes.
const maxModinfoBytes = 1 << 20

// readModinfo reads the .modinfo section of a module: NUL-separated
// key=value strings.
func readModinfo(path string) (modinfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return modinfo{}, err
	}
	defer f.Close()
	info, err := parseModinfo(f)
	if err != nil {
		return info, fmt.Errorf("%s: %w", path, err)
	}
	return info, nil
}

// parseModinfo reads the .modinfo section of the module r, at most
// maxModinfoBytes of it.
func parseModinfo(r io.ReaderAt) (modinfo, error) {
	var info modinfo
	f, err := elf.NewFile(r)
	if err != nil {
		return info, fmt.Errorf("not an ELF kernel module: %w", err)
	}
	sec := f.Section(".modinfo")
	if sec == nil {
		return info, errors.New("no .modinfo section (not a kernel module?)")
	}
	data, err := io.ReadAll(io.LimitReader(sec.Open(), maxModinfoBytes+1))
	if err != nil {
		return info, fmt.Errorf("read .modinfo: %w", err)
	}
	if len(data) > maxModinfoBytes {
		return info, fmt.Errorf(".modinfo is larger than %d bytes (not a kernel module?)", maxModinfoBytes)
	}
	for _, entry := range bytes.Split(data, []byte{0}) {
		key, value, _ := strings.Cut(string(entry), "=")
		switch key {
		case "depends":
			for _, d := range strings.Split(value, ",") {
				if d = strings.TrimSpace(d); d != "" {
					info.depends = append(info.depends, d)
				}
			}
		case "vermagic":
			info.vermagic = value
		}
	}
	return info, nil
}

// configValue returns the value of symbol in a kernel .config: "y", "m", a
// string, or "" when it is not set.
func configValue(path, symbol string) (string, error) {
	value := ""
	err := eachLine(path, func(line string) {
		if v, ok := strings.CutPrefix(line, symbol+"="); ok {
			value = v
		}
	})
	return value, err
}
