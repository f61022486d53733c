package kbuild

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrNoDependencyFiles is returned by ReadInputs for a directory that holds
// no kbuild dependency files: nothing was built there with kbuild (or with
// a build command of the user's), so nothing can be proven unused.
var ErrNoDependencyFiles = errors.New("no kbuild dependency files (.*.cmd)")

// Inputs are the source files a kbuild build directory's last build read,
// as kbuild itself recorded them: every .*.cmd file (written by fixdep for
// each target: its source, every header it included, its command line)
// and include/config/auto.conf.cmd (the Kconfig files). kbuild rebuilds a
// target when one of these changes, so a change to none of them leaves
// every object, and so the image, as it was.
type Inputs struct {
	src     string              // the source tree, absolute
	dir     string              // the build directory, absolute
	files   map[string]bool     // inputs, relative to src
	entered map[string]struct{} // directories kbuild built something in, relative to src
	// localVersionAuto is CONFIG_LOCALVERSION_AUTO=y in the .config.
	localVersionAuto bool
}

// ReadInputs reads what the last build of the tree src in the build
// directory dir (make O=dir) read. A build in the tree itself (dir == src)
// works too.
func ReadInputs(src, dir string) (*Inputs, error) {
	src, err := filepath.Abs(src)
	if err != nil {
		return nil, err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, err
	}
	in := &Inputs{src: src, dir: dir, files: map[string]bool{}, entered: map[string]struct{}{}}
	n := 0
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			// Not the repository, nor (for a build in the tree itself)
			// another build directory inside it.
			if path != dir && strings.HasPrefix(name, ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if !(strings.HasPrefix(name, ".") && strings.HasSuffix(name, ".cmd")) && !(name == "auto.conf.cmd" && filepath.Base(filepath.Dir(path)) == "config") {
			return nil
		}
		n++
		if rel, err := filepath.Rel(dir, filepath.Dir(path)); err == nil {
			in.entered[rel] = struct{}{}
		}
		return in.readCmd(path)
	})
	if err != nil {
		return nil, fmt.Errorf("read kbuild dependency files in %s: %w", dir, err)
	}
	if n == 0 {
		return nil, fmt.Errorf("%s: %w", dir, ErrNoDependencyFiles)
	}
	config, err := os.ReadFile(filepath.Join(dir, ".config"))
	if err != nil {
		return nil, fmt.Errorf("read kbuild dependency files: %w", err)
	}
	for _, line := range strings.Split(string(config), "\n") {
		if opt, val, ok := parseOption(line); ok && opt == "CONFIG_LOCALVERSION_AUTO" && val == "y" {
			in.localVersionAuto = true
		}
	}
	return in, nil
}

// readCmd adds the files a .cmd file names: its source_ line, its deps_
// list (leaving out $(wildcard include/config/…), options rather than
// files) and the words of its command line that are paths in the tree
// (scripts such as link-vmlinux.sh, linker scripts).
func (in *Inputs) readCmd(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	inDeps := false
	for sc.Scan() {
		line := sc.Text()
		if inDeps {
			t := strings.TrimSpace(line)
			inDeps = strings.HasSuffix(t, "\\")
			t = strings.TrimSpace(strings.TrimSuffix(t, "\\"))
			if t != "" && !strings.HasPrefix(t, "$(") {
				in.add(t)
			}
			continue
		}
		name, val, ok := strings.Cut(line, ":=")
		if !ok {
			continue
		}
		name = strings.TrimSpace(name)
		switch {
		case strings.HasPrefix(name, "deps_"):
			val = strings.TrimSpace(val)
			inDeps = strings.HasSuffix(val, "\\")
			for _, w := range strings.Fields(strings.TrimSuffix(val, "\\")) {
				if !strings.HasPrefix(w, "$(") {
					in.add(w)
				}
			}
		case strings.HasPrefix(name, "source_"), strings.HasPrefix(name, "savedcmd_"), strings.HasPrefix(name, "cmd_"):
			for _, w := range strings.FieldsFunc(val, func(r rune) bool {
				return r == ' ' || r == '\t' || r == '=' || r == ',' || r == ';' || r == '\'' || r == '"'
			}) {
				in.add(w)
			}
		}
	}
	return sc.Err()
}

// add records the path p, relative to the build directory or absolute,
// when it is in the source tree and not in the build directory.
func (in *Inputs) add(p string) {
	if p == "" || strings.HasPrefix(p, "-") {
		return
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(in.dir, p)
	}
	p = filepath.Clean(p)
	if in.dir != in.src && (p == in.dir || strings.HasPrefix(p, in.dir+string(filepath.Separator))) {
		return
	}
	rel, err := filepath.Rel(in.src, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return
	}
	in.files[rel] = true
}

// compiledKinds are the files kbuild compiles or includes, whose every use
// its dependency files record: such a file that no .cmd file names was not
// read.
var compiledKinds = []string{".c", ".h", ".S", ".s", ".rs", ".lds"}

// Reads reports whether the build read the file path (relative to the
// source tree, as git names it), or might have: a file some .cmd file
// names; or, in a directory kbuild built something in, any file but
// sources and headers, whose use kbuild does not record (its Makefile or
// Kbuild, a script it runs). A source or header no .cmd file names, or any
// file of a directory kbuild did not enter (Documentation/, selftests),
// was not read: changing it changes no object.
func (in *Inputs) Reads(path string) bool {
	path = filepath.Clean(path)
	if in.files[path] {
		return true
	}
	if _, ok := in.entered[filepath.Dir(path)]; !ok {
		return false
	}
	for _, ext := range compiledKinds {
		if strings.HasSuffix(path, ext) {
			return false
		}
	}
	return true
}

// SameKernel reports whether a change of the files changed (relative to
// the source tree) leaves the last build's kernel as it is, and if not,
// why: a file the build read (Reads), or CONFIG_LOCALVERSION_AUTO, which
// puts the git commit into the kernel's release.
func (in *Inputs) SameKernel(changed []string) (bool, string) {
	if in.localVersionAuto {
		return false, "CONFIG_LOCALVERSION_AUTO puts the commit in the release"
	}
	for _, p := range changed {
		if in.Reads(p) {
			return false, p + " is read by the build"
		}
	}
	return true, ""
}

// lastBuiltName is the file in a build directory naming the commit whose
// tree its objects were last built from (BuildKernel writes it; Build
// removes it first, so a build of anything else, or one that fails, leaves
// none).
const lastBuiltName = "lpmbisect-built-commit"

// LastBuilt returns the commit whose tree the objects of the build
// directory dir are built from, "" when unknown.
func LastBuilt(dir string) string {
	data, err := os.ReadFile(filepath.Join(dir, lastBuiltName))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// SetLastBuilt records that the objects of the build directory dir are
// those of commit: it was built, or it changes no file the build read.
func SetLastBuilt(dir, commit string) error {
	if err := os.WriteFile(filepath.Join(dir, lastBuiltName), []byte(commit+"\n"), 0o644); err != nil {
		return fmt.Errorf("build directory: record the commit built: %w", err)
	}
	return nil
}
