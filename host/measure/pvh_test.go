package measure

import (
	"bytes"
	"debug/elf"
	"os"
	"path/filepath"
	"testing"

	"github.com/lpmbisect/lpmbisect/host/kernel"
	"github.com/lpmbisect/lpmbisect/testbed/testkernels"
)

// TestPVHImage extracts the kernel ELF of both Debian kernels, which are
// built with CONFIG_PVH, and checks that it is an x86-64 ELF, cached under
// the image's SHA-256.
func TestPVHImage(t *testing.T) {
	cache := t.TempDir()
	for _, deb := range []string{testkernels.Debian61, testkernels.Debian612} {
		k, err := kernel.Resolve(testkernels.Deb(t, deb), cache)
		if err != nil {
			t.Fatal(err)
		}
		path, err := pvhImage(k, cache)
		if err != nil {
			t.Fatalf("PVHImage(%s) = %v; want the ELF", deb, err)
		}
		if want := filepath.Join(cache, "kernels", "pvh-"+k.SHA256+".elf"); path != want {
			t.Errorf("PVHImage(%s) = %s; want %s", deb, path, want)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := elf.NewFile(bytes.NewReader(data))
		if err != nil || f.Machine != elf.EM_X86_64 {
			t.Errorf("PVHImage(%s): not an x86-64 ELF (%v)", deb, err)
		}
		if again, err := pvhImage(k, cache); err != nil || again != path {
			t.Errorf("PVHImage(%s) again = %s, %v; want the cached %s", deb, again, err, path)
		}
	}
}
