package bisect

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestKernelEndpoints: of a step's endpoints, those that are kernels on
// disk (which probe KVM before anything is built) are the ones the step
// reads as kernels; revisions and empty values are not.
func TestKernelEndpoints(t *testing.T) {
	k := filepath.Join(t.TempDir(), "vmlinuz-6.12")
	if err := os.WriteFile(k, []byte("kernel"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := KernelEndpoints("v6.11", k, "", "HEAD~3"); !slices.Equal(got, []string{k}) {
		t.Errorf("KernelEndpoints = %q; want only the kernel on disk %q", got, k)
	}
	if got := KernelEndpoints("v6.11", "v6.12"); got != nil {
		t.Errorf("KernelEndpoints of two revisions = %q; want none", got)
	}
}
