package initramfs

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/u-root/mkuimage/cpio"

	"github.com/lpmbisect/lpmbisect/wire"
)

// staticBinary builds a tiny static program to stand in for the guest.
func staticBinary(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	os.WriteFile(src, []byte("package main\nfunc main() { println(\""+body+"\") }\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module fakeguest\n"), 0o644)
	out := filepath.Join(dir, guestName)
	cmd := exec.Command("go", "build", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build fake guest: %v\n%s", err, b)
	}
	return out
}

func archiveFiles(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := cpio.ReadAllRecords(cpio.Newc.Reader(f))
	if err != nil {
		t.Fatalf("read cpio %s: %v", path, err)
	}
	files := map[string][]byte{}
	for _, r := range recs {
		var b []byte
		if r.ReaderAt != nil {
			b = make([]byte, r.FileSize)
			r.ReadAt(b, 0)
		}
		files[r.Name] = b
	}
	return files
}

func TestBuildLayoutAndCache(t *testing.T) {
	guest := staticBinary(t, "one")
	mods := t.TempDir()
	modA, modB := filepath.Join(mods, "a.ko"), filepath.Join(mods, "b.ko")
	os.WriteFile(modA, []byte("module a"), 0o644)
	os.WriteFile(modB, []byte("module b"), 0o644)
	cache := t.TempDir()
	spec := Spec{Guest: guest, Modules: []Module{{"virtio_ring", modA}, {"virtio_console", modB}}}

	img, err := Build(spec, cache)
	if err != nil {
		t.Fatalf("Build() = %v", err)
	}
	if img.Cached {
		t.Errorf("Build() on an empty cache: Cached = true; want false")
	}
	files := archiveFiles(t, img.Path)
	want, _ := os.ReadFile(guest)
	if !bytes.Equal(files["bin/"+guestName], want) {
		t.Errorf("archive bin/%s differs from the guest binary", guestName)
	}
	if _, ok := files["init"]; !ok {
		t.Errorf("archive has no /init")
	}
	order := string(files[strings.TrimPrefix(wire.LoadOrderFile, "/")])
	wantOrder := wire.ModuleDir + "/00-virtio_ring.ko\n" + wire.ModuleDir + "/01-virtio_console.ko\n"
	if order != wantOrder {
		t.Errorf("load-order = %q; want %q", order, wantOrder)
	}
	if got := string(files[strings.TrimPrefix(wire.ModuleDir, "/")+"/01-virtio_console.ko"]); got != "module b" {
		t.Errorf("packed virtio_console = %q; want %q", got, "module b")
	}

	again, err := Build(spec, cache)
	if err != nil || !again.Cached || again.Path != img.Path {
		t.Errorf("Build(same spec) = %+v, %v; want the cached %s", again, err, img.Path)
	}
	// Any content change gives a new archive.
	os.WriteFile(modB, []byte("module b v2"), 0o644)
	changed, err := Build(spec, cache)
	if err != nil || changed.Cached || changed.Path == img.Path {
		t.Errorf("Build(changed module) = %+v, %v; want a new archive", changed, err)
	}
	noMods, err := Build(Spec{Guest: guest}, cache)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := archiveFiles(t, noMods.Path)[strings.TrimPrefix(wire.LoadOrderFile, "/")]; ok {
		t.Errorf("archive without modules has a load-order file")
	}
}

func TestBuildPacksFiles(t *testing.T) {
	guest := staticBinary(t, "files")
	obj := filepath.Join(t.TempDir(), "prog.o")
	os.WriteFile(obj, []byte("object v1"), 0o644)
	cache := t.TempDir()
	spec := Spec{Guest: guest, Files: []File{{Host: obj, Archive: wire.WorkloadObject}}}
	img, err := Build(spec, cache)
	if err != nil {
		t.Fatalf("Build() = %v", err)
	}
	if got := string(archiveFiles(t, img.Path)[strings.TrimPrefix(wire.WorkloadObject, "/")]); got != "object v1" {
		t.Errorf("packed %s = %q; want %q", wire.WorkloadObject, got, "object v1")
	}
	os.WriteFile(obj, []byte("object v2"), 0o644)
	if changed, err := Build(spec, cache); err != nil || changed.Path == img.Path {
		t.Errorf("Build(changed file) = %+v, %v; want a new archive", changed, err)
	}
	plain, err := Build(Spec{Guest: guest}, cache)
	if err != nil || plain.Path == img.Path {
		t.Errorf("Build(no files) = %+v, %v; want another archive than with files", plain, err)
	}
}

func TestBuildConcurrent(t *testing.T) {
	guest := staticBinary(t, "two")
	cache := t.TempDir()
	var wg sync.WaitGroup
	paths := make([]string, 4)
	errs := make([]error, 4)
	for i := range paths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			img, err := Build(Spec{Guest: guest}, cache)
			errs[i] = err
			if err == nil {
				paths[i] = img.Path
			}
		}()
	}
	wg.Wait()
	for i := range paths {
		if errs[i] != nil || paths[i] != paths[0] {
			t.Errorf("Build #%d = %q, %v; want %q", i, paths[i], errs[i], paths[0])
		}
	}
	entries, _ := filepath.Glob(filepath.Join(cache, "initramfs", "pack-*"))
	if len(entries) != 0 {
		t.Errorf("left temporary directories behind: %v", entries)
	}
	archiveFiles(t, paths[0]) // complete and readable
}

func TestBuildRejectsBadGuests(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "guest.sh")
	os.WriteFile(text, []byte("#!/bin/sh\necho hi\n"), 0o755)
	for name, path := range map[string]string{
		"missing": filepath.Join(dir, "nope"),
		"script":  text,
		"dynamic": "/bin/sh",
	} {
		if _, err := Build(Spec{Guest: path}, t.TempDir()); err == nil {
			t.Errorf("Build(%s guest) = nil error; want an error", name)
		}
	}
}
