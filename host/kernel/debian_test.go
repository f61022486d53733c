package kernel

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lpmbisect/lpmbisect/testbed/testkernels"

	"github.com/lpmbisect/lpmbisect/internal/cachefile"
)

// TestDebian61 resolves the Debian 6.1 cloud package, whose virtio drivers
// are plain .ko modules: twice at once into an empty cache, then once more
// from the cache.
func TestDebian61(t *testing.T) {
	deb := testkernels.Deb(t, testkernels.Debian61)
	cache := t.TempDir()

	// Two resolvers race on an empty cache: both must succeed and agree.
	var (
		wg      sync.WaitGroup
		kernels [2]*Kernel
		errs    [2]error
	)
	start := time.Now()
	for i := range kernels {
		wg.Go(func() { kernels[i], errs[i] = Resolve(deb, cache) })
	}
	wg.Wait()
	cold := time.Since(start)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Resolve(%s) #%d: %v", deb, i, err)
		}
	}
	if *kernels[0] != *kernels[1] {
		t.Errorf("concurrent Resolve(%s) disagree: %+v and %+v", deb, *kernels[0], *kernels[1])
	}
	k := kernels[0]

	start = time.Now()
	again, err := Resolve(deb, cache)
	cached := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Resolve(%s): cold (two at once) %v, cached %v", filepath.Base(deb), cold.Round(time.Millisecond), cached.Round(time.Millisecond))
	if *again != *k {
		t.Errorf("Resolve(%s) from the cache = %+v; want %+v", deb, *again, *k)
	}
	if cached > cold/2 {
		t.Errorf("Resolve(%s) from the cache took %v, unpacking took %v: the cache is not used", deb, cached, cold)
	}

	if k.Release != testkernels.Release61 {
		t.Errorf("Resolve(%s).Release = %q; want %q", deb, k.Release, testkernels.Release61)
	}
	if got, err := cachefile.SHA256(k.Image); err != nil || got != k.SHA256 || len(k.SHA256) != 64 {
		t.Errorf("Resolve(%s).SHA256 = %q; the image hashes to %q, %v", deb, k.SHA256, got, err)
	}
	if got, err := ReadRelease(k.Image); err != nil || got != k.Release {
		t.Errorf("ReadRelease(%s) = %q, %v; want %q", k.Image, got, err, k.Release)
	}
	if !isFile(k.ConfigPath) || !isFile(filepath.Join(k.ModulesDir, "modules.order")) {
		t.Errorf("Resolve(%s) = ConfigPath %q, ModulesDir %q; want the package's config and lib/modules", deb, k.ConfigPath, k.ModulesDir)
	}
	entries, _ := os.ReadDir(filepath.Join(cache, "kernels"))
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("cache holds a temporary %s after unpacking", e.Name())
		}
	}

	mods, err := k.ChannelModules(cache)
	if err != nil {
		t.Fatal(err)
	}
	names := moduleNames(mods)
	want := []string{"virtio", "virtio_console", "virtio_pci", "virtio_pci_legacy_dev", "virtio_pci_modern_dev", "virtio_ring"}
	if sorted := slices.Sorted(slices.Values(names)); !slices.Equal(sorted, want) {
		t.Errorf("ChannelModules(%s) = %v; want the modules %v", k.Release, names, want)
	}
	checkLoadOrder(t, mods)
	for _, m := range mods {
		if filepath.Ext(m.Path) != ".ko" || !strings.HasPrefix(m.Path, k.ModulesDir) {
			t.Errorf("ChannelModules(%s): %s at %s; want the package's plain .ko", k.Release, m.Name, m.Path)
		}
	}
	t.Logf("ChannelModules(%s) = %v", k.Release, names)
}

// TestDebian612 resolves the Debian 6.12 cloud package: virtio is built in,
// and modules are xz-compressed.
func TestDebian612(t *testing.T) {
	deb := testkernels.Deb(t, testkernels.Debian612)
	cache := t.TempDir()
	start := time.Now()
	k, err := Resolve(deb, cache)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Resolve(%s): cold %v", filepath.Base(deb), time.Since(start).Round(time.Millisecond))
	if k.Release != testkernels.Release612 {
		t.Errorf("Resolve(%s).Release = %q; want %q", deb, k.Release, testkernels.Release612)
	}

	mods, err := k.ChannelModules(cache)
	if err != nil || len(mods) != 0 {
		t.Errorf("ChannelModules(%s) = %v, %v; want [], nil (virtio is built in)", k.Release, mods, err)
	}

	// virtio_net is an xz-compressed module here, with dependencies.
	mods, err = k.ModulesFor(cache, "virtio_net")
	if err != nil {
		t.Fatal(err)
	}
	if len(mods) == 0 || mods[len(mods)-1].Name != "virtio_net" {
		t.Fatalf("ModulesFor(%s, virtio_net) = %v; want it last", k.Release, mods)
	}
	checkLoadOrder(t, mods)
	for _, m := range mods {
		b, err := os.ReadFile(m.Path)
		if err != nil || !bytes.HasPrefix(b, []byte("\x7fELF")) || !strings.HasPrefix(m.Path, cache) {
			t.Errorf("ModulesFor(%s, virtio_net): %s at %s is not a decompressed ELF in the cache (%v)", k.Release, m.Name, m.Path, err)
		}
	}
	t.Logf("ModulesFor(%s, virtio_net) = %v", k.Release, moduleNames(mods))
}
