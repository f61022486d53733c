package initramfs

import (
	"os"
	"testing"

	"github.com/lpmbisect/lpmbisect/host/kernel"
	"github.com/lpmbisect/lpmbisect/testbed/testguest"
	"github.com/lpmbisect/lpmbisect/testbed/testkernels"
)

// benchSpec is a real archive's content: the guest plus the six virtio
// modules Debian 6.1 needs.
func benchSpec(b *testing.B) Spec {
	b.Helper()
	cache := b.TempDir()
	k, err := kernel.Resolve(testkernels.Deb(b, testkernels.Debian61), cache)
	if err != nil {
		b.Fatal(err)
	}
	mods, err := k.ChannelModules(cache)
	if err != nil {
		b.Fatal(err)
	}
	spec := Spec{Guest: testguest.Path(b)}
	for _, m := range mods {
		spec.Modules = append(spec.Modules, Module{Name: m.Name, Path: m.Path})
	}
	return spec
}

// Goals: cold ≤ 10 s, cached ≤ 0.2 s.
func BenchmarkBuild(b *testing.B) {
	spec := benchSpec(b)
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			cache, err := os.MkdirTemp(b.TempDir(), "cold-")
			if err != nil {
				b.Fatal(err)
			}
			if img, err := Build(spec, cache); err != nil || img.Cached {
				b.Fatalf("Build = %+v, %v; want a fresh archive", img, err)
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		cache := b.TempDir()
		if _, err := Build(spec, cache); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if img, err := Build(spec, cache); err != nil || !img.Cached {
				b.Fatalf("Build = %+v, %v; want the cached archive", img, err)
			}
		}
	})
}
