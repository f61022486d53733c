package vmrunner

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lpmbisect/lpmbisect/wire"
)

const memcountSample = `memcount 1 l1d 49152 12 l1i 32768 8 llc 2097152 16 dtlb 64 4 line 64 page 4096
segment 1 windows 10 insns 32537 l1d 7555 104 l1i 32000 1 llc 105 3 dtlb 7555 1
pc 1 ffffffff81234567 5000 100 2 1
pc 1 ffffffffc0001000 2555 4 1 0
end segments 1 marks 12 12 1 1 1 1 armed_ns 2000000000 1500000000
`

func TestParseMemCounts(t *testing.T) {
	m, err := parseMemCounts(strings.NewReader(memcountSample))
	if err != nil {
		t.Fatal(err)
	}
	s := m.Segment(1)
	if !m.Complete || s == nil || s.Windows != 10 || s.Insns != 32537 || s.L1D != (CacheCount{7555, 104}) || s.DTLB != (CacheCount{7555, 1}) || len(s.PCs) != 2 || s.PCs[0].PC != 0xffffffff81234567 || m.Marks != [6]uint64{12, 12, 1, 1, 1, 1} || m.ArmedCPU != 1500*time.Millisecond {
		t.Errorf("parseMemCounts() = %+v, segment %+v", m, s)
	}
	if m.Segment(2) != nil {
		t.Errorf("Segment(2) = %+v; want nil", m.Segment(2))
	}
}

func TestParseMemCountsRejects(t *testing.T) {
	for name, in := range map[string]string{
		"empty":          "",
		"no model":       "segment 1 windows 1 insns 1 l1d 1 1 l1i 1 1 llc 1 1 dtlb 1 1\n",
		"short segment":  "memcount 1 x\nsegment 1 windows 1\n",
		"unknown record": "memcount 1 x\nhello\n",
		"orphan pc":      "memcount 1 x\npc 3 ff 1 1 1 1\n",
		"bad number":     "memcount 1 x\nsegment 1 windows x insns 1 l1d 1 1 l1i 1 1 llc 1 1 dtlb 1 1\n",
	} {
		if _, err := parseMemCounts(strings.NewReader(in)); err == nil {
			t.Errorf("parseMemCounts(%s) = nil error; want one", name)
		}
	}
	var b strings.Builder
	b.WriteString("memcount 1 x\nsegment 1 windows 1 insns 1 l1d 1 1 l1i 1 1 llc 1 1 dtlb 1 1\n")
	for range maxMemcountPCs + 1 {
		b.WriteString("pc 1 ff 1 1 1 1\n")
	}
	if _, err := parseMemCounts(strings.NewReader(b.String())); err == nil {
		t.Errorf("parseMemCounts(%d pc lines) = nil error; want the bound", maxMemcountPCs+1)
	}
}

func TestMemoryPluginArgs(t *testing.T) {
	dir := t.TempDir()
	plugin := filepath.Join(dir, "memcount.so")
	c := Config{Kernel: "k", Initramfs: "i", RunDir: dir, Accel: wire.AccelIcount, MemoryPlugin: plugin}
	c.setDefaults()
	args := c.CommandLine()
	if i := slices.Index(args, "-plugin"); i < 0 || args[i+1] != plugin+",outfile="+filepath.Join(dir, memcountFile) || !slices.Contains(args, memoryRTC) {
		t.Errorf("CommandLine() = %q; want -plugin %s,outfile=… and -rtc %s", args, plugin, memoryRTC)
	}
	if i := slices.Index(args, "-accel"); i < 0 || args[i+1] != "tcg,tb-size=1024" {
		t.Errorf("CommandLine() = %q; want a code cache that the plugin's blocks never fill (-accel tcg,tb-size=1024)", args)
	}
	if plain := (Config{Kernel: "k", Initramfs: "i", RunDir: dir, Accel: wire.AccelIcount}).CommandLine(); !slices.Contains(plain, "tcg") {
		t.Errorf("CommandLine() without the plugin = %q; want QEMU's own code cache (-accel tcg)", plain)
	}
	var pe *MemoryPluginError
	if err := c.checkMemoryPlugin(); !errors.As(err, &pe) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("checkMemoryPlugin() of a missing plugin = %v; want a *MemoryPluginError wrapping ErrNotExist", err)
	}
	os.WriteFile(plugin, nil, 0o644)
	if err := c.checkMemoryPlugin(); err != nil {
		t.Errorf("checkMemoryPlugin() = %v; want nil", err)
	}
	c.Accel = wire.AccelKVM
	if err := c.checkMemoryPlugin(); err != nil || c.MemoryPlugin != "" || slices.Contains(c.CommandLine(), "-plugin") {
		t.Errorf("checkMemoryPlugin() under KVM = %v, plugin %q; want the plugin left out", err, c.MemoryPlugin)
	}
}

// builtMemoryPlugin is the plugin scripts/setup built, or a skip.
func builtMemoryPlugin(t *testing.T) string {
	t.Helper()
	path, tried := FindMemoryPlugin(os.Getenv("LPMBISECT_CACHE"))
	if path == "" {
		t.Skipf("no memory plugin at %s (run scripts/setup)", strings.Join(tried, " or "))
	}
	if _, err := exec.LookPath(DefaultQEMU); err != nil {
		t.Skip("no QEMU (run scripts/setup)")
	}
	return path
}

// TestMemoryPluginLoads loads the built plugin into Debian's QEMU (no
// machine, quit at once from the monitor): QEMU accepts it, its file
// has the model and end lines, and a bad argument makes QEMU refuse it.
func TestMemoryPluginLoads(t *testing.T) {
	plugin := builtMemoryPlugin(t)
	out := filepath.Join(t.TempDir(), memcountFile)
	run := func(arg string) (string, error) {
		cmd := exec.Command(DefaultQEMU, "-M", "none", "-nodefaults", "-display", "none", "-monitor", "stdio", "-plugin", plugin+","+arg)
		cmd.Stdin = strings.NewReader("quit\n")
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	if msg, err := run("outfile=" + out); err != nil {
		t.Fatalf("qemu -plugin %s: %v\n%s", plugin, err, msg)
	}
	m, err := ReadMemCounts(out)
	if err != nil || !m.Complete || !strings.HasPrefix(m.Model, "l1d 49152 12 l1i 32768 8 llc 2097152 16 dtlb 64 4") || len(m.Segments) != 0 {
		t.Errorf("ReadMemCounts() = %+v, %v; want the default model, complete, no segments", m, err)
	}
	if msg, err := run("outfile=" + out + ",l1d=48K:7"); err == nil || !strings.Contains(msg, "power-of-two") {
		t.Errorf("qemu -plugin with 48K 7-way L1D: %v\n%s; want QEMU to refuse it (no power-of-two sets)", err, msg)
	}
}

// The plugin scripts/setup built under the user's cache directory is
// found whatever cache directory a run uses; one under the run's cache
// directory comes first.
func TestFindMemoryPlugin(t *testing.T) {
	user, run := t.TempDir(), t.TempDir()
	t.Setenv("XDG_CACHE_HOME", user)
	if got, tried := FindMemoryPlugin(run); got != "" || len(tried) != 2 {
		t.Fatalf("FindMemoryPlugin(%s) = %q, %v; want nothing found in two places", run, got, tried)
	}
	built := DefaultMemoryPlugin(filepath.Join(user, "lpmbisect"))
	for _, p := range []string{built, DefaultMemoryPlugin(run)} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("ELF"), 0o644); err != nil {
			t.Fatal(err)
		}
		if got, _ := FindMemoryPlugin(run); got != p {
			t.Errorf("FindMemoryPlugin(%s) = %q; want %s", run, got, p)
		}
	}
	if got, tried := FindMemoryPlugin(""); got != built || len(tried) != 1 {
		t.Errorf("FindMemoryPlugin(\"\") = %q, %v; want %s alone", got, tried, built)
	}
}
