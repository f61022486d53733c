package importrule

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// goFile is a Go file of the module as the import rules read it: its
// path and package directory below the module root (slash-separated),
// whether it is a test, and the module's packages it imports (paths below
// the module root).
type goFile struct {
	rel, pkg string
	test     bool
	imports  []string
}

// moduleFiles reads the imports of every Go file of the module below root
// (walkGo's), in the order of their paths: the one reader every rule of
// this package checks.
func moduleFiles(root, module string) ([]goFile, error) {
	var files []goFile
	fset := token.NewFileSet()
	err := walkGo(root, func(rel string) error {
		f, err := parser.ParseFile(fset, filepath.Join(root, rel), nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		g := goFile{rel: filepath.ToSlash(rel), pkg: filepath.ToSlash(filepath.Dir(rel)), test: strings.HasSuffix(rel, "_test.go")}
		for _, spec := range f.Imports {
			imp, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				return err
			}
			if pkg, ok := strings.CutPrefix(imp, module+"/"); ok {
				g.imports = append(g.imports, pkg)
			}
		}
		files = append(files, g)
		return nil
	})
	return files, err
}

// walkGo calls fn with the path, relative to root, of every Go file of the
// module below root, skipping testdata, vendor, and dot and underscore
// directories.
func walkGo(root string, fn func(rel string) error) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		return fn(rel)
	})
}

// moduleRoot finds the directory of go.mod above this package and the
// module path it declares.
func moduleRoot() (dir, module string, err error) {
	dir, err = os.Getwd()
	if err != nil {
		return "", "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil {
			for line := range strings.Lines(string(data)) {
				if m, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
					return dir, strings.Trim(strings.TrimSpace(m), `"`), nil
				}
			}
			return "", "", fmt.Errorf("%s/go.mod names no module", dir)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", "", fmt.Errorf("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// writeTree writes files (path below root → content) under root.
func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
