package workloads

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
)

// The example objects, built from their C sources by
// examples/xdp-lpm/build.sh (CI checks they match).
var (
	exampleObject = filepath.Join("..", "..", "examples", "xdp-lpm", "xdp_lpm.o")
	brokenObject  = filepath.Join("..", "..", "examples", "xdp-lpm", "broken.o")
	exampleMaps   = filepath.Join("..", "..", "examples", "xdp-lpm", "blocked.txt")
)

func TestInspectWorkload(t *testing.T) {
	for _, c := range []struct {
		path, prog    string
		timed, verify string
	}{
		{exampleObject, "", "xdp_lpm", ""},
		{brokenObject, "", "xdp_unchecked", "kprobe_gettid"},
		{brokenObject, "kprobe_gettid", "", "kprobe_gettid"},
		{brokenObject, "xdp_unchecked", "xdp_unchecked", ""},
	} {
		w, err := InspectWorkload(c.path, c.prog)
		timed, verify := w.Plan()
		if err != nil || timed != c.timed || verify != c.verify {
			t.Errorf("InspectWorkload(%s, %q) = %+v (plan %q, %q), %v; want plan %q, %q", c.path, c.prog, w, timed, verify, err, c.timed, c.verify)
		}
	}
	for _, c := range []struct{ path, prog, want string }{
		{brokenObject, "nosuch", `has no program "nosuch"`},
		{exampleMaps, "", "want an ELF object"},
	} {
		_, err := InspectWorkload(c.path, c.prog)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("InspectWorkload(%s, %q) = %v; want one line with %q", c.path, c.prog, err, c.want)
		}
	}
}

func TestDefaultPacket(t *testing.T) {
	p := defaultPacket()
	if len(p) != 64 || p[12] != 0x08 || p[13] != 0 || p[14] != 0x45 || p[23] != 17 {
		t.Fatalf("DefaultPacket() = % x; want 64 bytes of Ethernet/IPv4/UDP", p)
	}
	// The IPv4 header sums to 0xffff with its checksum.
	var sum uint32
	for i := 14; i < 34; i += 2 {
		sum += uint32(p[i])<<8 | uint32(p[i+1])
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	if sum != 0xffff {
		t.Errorf("IPv4 header checksum does not verify: sum %#x", sum)
	}
}

func TestFillMapsRejects(t *testing.T) {
	for _, in := range []string{"blocked 00", "nosuch 00 00", "blocked zz 00"} {
		if err := fillMaps(strings.NewReader(in), map[string]*ebpf.Map{}); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("FillMaps(%q) = %v; want a one-line error", in, err)
		}
	}
}

// TestWorkloadRunsHere runs the example program and its noop on the
// host's kernel, with the example map entries, and the broken one.
func TestWorkloadRunsHere(t *testing.T) {
	skipWithoutBPF(t)
	dir := t.TempDir()
	u := &userProgram{name: "xdp_lpm", object: exampleObject, packet: filepath.Join(dir, "none"), maps: exampleMaps}
	p := Params{Samples: 2, Rounds: 1}
	for _, noop := range []bool{true, false} {
		var samples []Sample
		r := &Run{Params: p, Logf: t.Logf, Info: func(s string) { t.Log(s) }, Sample: func(s Sample) error { samples = append(samples, s); return nil }}
		if err := u.run(noop)(r); err != nil {
			t.Fatalf("run (noop %v) = %v", noop, err)
		}
		if len(samples) != 2 || samples[0].Ops != userRunsPerRound {
			t.Errorf("noop %v: samples %+v; want 2 of %d runs", noop, samples, userRunsPerRound)
		}
		t.Logf("noop %v: %.2f ns/op", noop, samples[0].PerOp())
	}
	if err := os.WriteFile(u.packet, []byte{1, 2, 3}, 0o644); err != nil {
		t.Fatal(err)
	}
	r := &Run{Params: p, Logf: func(string, ...any) {}, Info: func(string) {}, Sample: func(Sample) error { return nil }}
	if err := u.run(false)(r); err == nil || !strings.Contains(err.Error(), "at least an Ethernet header") {
		t.Errorf("run with a 3-byte packet = %v; want a packet error", err)
	}
	b := &userProgram{name: "xdp_unchecked", object: brokenObject, packet: filepath.Join(dir, "none")}
	err := b.run(false)(r)
	if err == nil || !strings.Contains(err.Error(), "the verifier rejected xdp_unchecked: ") || !strings.Contains(err.Error(), "invalid access to packet") || strings.Contains(err.Error(), "\n") {
		t.Errorf("run of the broken program = %v; want one line with the verifier's complaint", err)
	}
	t.Logf("broken: %v", err)
}
