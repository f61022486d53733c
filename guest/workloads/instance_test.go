package workloads

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
)

const kallsymsSample = `0000000000000000 A fixed_percpu_data
ffffffff81000000 T _text
ffffffff81000000 T startup_64
ffffffff812f8a40 t __pfx_longest_prefix_match.isra.0
ffffffff812f8a50 t longest_prefix_match.isra.0
ffffffff812f8b90 t trie_lookup_elem
ffffffff812f8c50 t longest_prefix_match.isra.0.cold
ffffffff82000000 D init_task
ffffffff82a00000 b some_bss
ffffffffc0001000 t virtio_dev_probe	[virtio]
`

func TestReadKallsyms(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kallsyms")
	os.WriteFile(path, []byte(kallsymsSample), 0o644)
	b, err := readKallsyms(path)
	if err != nil {
		t.Fatal(err)
	}
	want := `ffffffff81000000 T _text
ffffffff81000000 T startup_64
ffffffff812f8a40 t __pfx_longest_prefix_match.isra.0
ffffffff812f8a50 t longest_prefix_match.isra.0
ffffffff812f8b90 t trie_lookup_elem
ffffffff812f8c50 t longest_prefix_match.isra.0.cold
`
	if string(b) != want {
		t.Errorf("readKallsyms = %q; want the code symbols %q", b, want)
	}
	got := matchTargets(b, []string{"longest_prefix_match", "trie_lookup_elem", "trie_update_elem"})
	wantT := map[string][]string{"longest_prefix_match": {"longest_prefix_match.isra.0"}, "trie_lookup_elem": {"trie_lookup_elem"}}
	if !reflect.DeepEqual(got, wantT) {
		t.Errorf("matchTargets = %v; want %v", got, wantT)
	}

	hidden := filepath.Join(t.TempDir(), "hidden")
	os.WriteFile(hidden, regexp.MustCompile(`(?m)^[0-9a-f]{16}`).ReplaceAll([]byte(kallsymsSample), []byte("0000000000000000")), 0o644)
	if _, err := readKallsyms(hidden); err == nil || !strings.Contains(err.Error(), "hidden") {
		t.Errorf("readKallsyms(zero addresses) = %v; want the addresses hidden", err)
	}
	big := filepath.Join(t.TempDir(), "big")
	os.WriteFile(big, make([]byte, maxKallsymsBytes+1), 0o644)
	if _, err := readKallsyms(big); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("readKallsyms(%d bytes) = %v; want it refused", maxKallsymsBytes+1, err)
	}
}

func TestWhyNotCounted(t *testing.T) {
	noFunc := fmt.Errorf("load program: %w", ebpf.ErrNotSupported)
	notTraceable := errors.New("attach tracing: invalid argument")
	for _, c := range []struct {
		sym        string
		path       Path
		kerr, ferr error
		btf        bool
		want       string
	}{
		{"longest_prefix_match.isra.0", PathSyscall, nil, noFunc, true,
			"longest_prefix_match.isra.0: a .isra clone has no BTF FUNC, fentry cannot attach; kprobes do not see the syscall path (bpf_disable_instrumentation)"},
		{"trie_update_elem.constprop.0", PathKprobeProgram, nil, noFunc, true,
			"trie_update_elem.constprop.0: a .constprop clone has no BTF FUNC, fentry cannot attach; kprobes do not see calls from a program a kprobe runs (bpf_prog_active)"},
		{"trie_lookup_elem", PathSyscall, nil, noFunc, false,
			"trie_lookup_elem: no kernel BTF, fentry cannot attach; kprobes do not see the syscall path (bpf_disable_instrumentation)"},
		{"trie_lookup_elem", PathSyscall, nil, notTraceable, true,
			"trie_lookup_elem: fentry: attach tracing: invalid argument; kprobes do not see the syscall path (bpf_disable_instrumentation)"},
		{"trie_lookup_elem", PathTestRun, os.ErrNotExist, noFunc, true,
			"no kprobes in the kernel, or not traceable: kprobe: file does not exist; no BTF FUNC for it, fentry cannot attach"},
	} {
		if got := whyNotCounted(c.sym, c.path, c.kerr, c.ferr, c.btf); got != c.want {
			t.Errorf("whyNotCounted(%s, %v, %v, %v, btf %v) =\n%q; want\n%q", c.sym, c.path, c.kerr, c.ferr, c.btf, got, c.want)
		}
	}
}

// TestInstancesWhereTheTrieIsReached checks which benchmarks the insight
// pass sets up: every family whose operations reach the LPM trie, and
// every benchmark with functions of interest of its own (the other map
// families), and the branch model's controls, which the memory pass
// counts; none whose operations reach neither (MapBatch's hash maps, ring
// buffers, the other families' controls).
func TestInstancesWhereTheTrieIsReached(t *testing.T) {
	reaches := regexp.MustCompile(`^(LPMTrie/op=(noop|baseline|lookup|update|insert|delete)|LPMTrieSeed/|LPMTrieUnrolled/|LPMTrieSyscall/|MapBatch/map=lpm_trie/|BranchModel/)`)
	for _, b := range Registry() {
		if got, want := b.Instance != nil, reaches.MatchString(b.Name) || len(b.Functions) > 0; got != want {
			t.Errorf("%s: has an insight instance %v; want %v", b.Name, got, want)
		}
	}
}
