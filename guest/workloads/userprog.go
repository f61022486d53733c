package workloads

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/lpmbisect/lpmbisect/wire"
)

// A user's program (--workload FILE.o[:PROGRAM]) runs as two benchmarks:
// Workload/prog=NAME, the program, and Workload/prog=NAME/op=noop, a
// program of the same type that returns at once, with the same input: its
// control. Both are timed by BPF_PROG_TEST_RUN's own duration, which is
// the kernel's average time per run over the repetitions of one call,
// truncated to a whole nanosecond (a 32-bit value), and which includes the
// test run's loop around the program (and, for packet programs, resetting
// the context each time): the noop measures that part.

// testRunnable are the program types lpmbisect runs with a packet, and the
// first Linux release whose BPF_PROG_TEST_RUN runs them.
var testRunnable = map[ebpf.ProgramType]string{
	ebpf.SocketFilter: "4.12",
	ebpf.SchedCLS:     "4.12",
	ebpf.SchedACT:     "4.12",
	ebpf.XDP:          "4.12",
	ebpf.CGroupSKB:    "4.12",
	ebpf.LWTIn:        "4.12",
	ebpf.LWTOut:       "4.12",
	ebpf.LWTXmit:      "4.12",
}

// WorkloadPrograms are the programs of a user's object that a run loads:
// all of them are verified (Verifier/prog=NAME), and those in Timed, whose
// type BPF_PROG_TEST_RUN runs with a packet, are also timed
// (Workload/prog=NAME). Verified holds Timed's names too, in order.
type WorkloadPrograms struct {
	Timed, Verified []string
}

// Plan returns the programs as wire.Plan's Workload and Verify: the timed
// ones, and the others.
func (w WorkloadPrograms) Plan() (workload, verify string) {
	var rest []string
	for _, n := range w.Verified {
		if !slices.Contains(w.Timed, n) {
			rest = append(rest, n)
		}
	}
	return strings.Join(w.Timed, ","), strings.Join(rest, ",")
}

// InspectWorkload reads the BPF ELF object at path and returns the programs
// a run loads: every program in it, or only the one named prog when prog
// is not "". It checks what the host can check before any boot: the object
// parses, has programs (prog among them), and their names are not those of
// lpmbisect's own verifier rows.
func InspectWorkload(path, prog string) (WorkloadPrograms, error) {
	var w WorkloadPrograms
	spec, err := ebpf.LoadCollectionSpec(path)
	if err != nil {
		return w, fmt.Errorf("read BPF object %s: %w (want an ELF object built with clang -target bpf)", path, err)
	}
	var names []string
	for n := range spec.Programs {
		names = append(names, n)
	}
	slices.Sort(names)
	switch {
	case len(names) == 0:
		return w, fmt.Errorf("%s holds no BPF program (want an ELF object with programs in SEC(\"...\") sections)", path)
	case prog != "" && spec.Programs[prog] == nil:
		return w, fmt.Errorf("%s has no program %q (it has: %s)", path, prog, strings.Join(names, ", "))
	case prog != "":
		names = []string{prog}
	}
	own := OwnPrograms()
	for _, n := range names {
		if slices.Contains(own, n) {
			return w, fmt.Errorf("%s: program %s has the name of one of lpmbisect's own programs (rename it)", path, n)
		}
		w.Verified = append(w.Verified, n)
		if _, ok := testRunnable[spec.Programs[n].Type]; ok {
			w.Timed = append(w.Timed, n)
		}
	}
	return w, nil
}

// workloadBenchmarks returns the benchmarks of the user's programs
// (wire.Plan.Workload and Verify), read in the guest from
// wire.WorkloadObject: for each timed program, the program and its noop
// control; for every program, its verifier row. None for "".
func workloadBenchmarks(timed, verifyOnly string) []*Benchmark {
	var out []*Benchmark
	for _, prog := range wire.Programs(timed) {
		u := &userProgram{name: prog, object: wire.WorkloadObject, packet: wire.WorkloadPacket, maps: wire.WorkloadMaps}
		req := Requirement{Feature: "BPF_PROG_TEST_RUN with repetitions", MinKernel: "4.12", Probe: bpfProbe(func() error { return nil })}
		out = append(out,
			&Benchmark{Name: wire.WorkloadNoop(prog), Requires: []Requirement{req},
				Doc: "a program of the same type as " + prog + " that returns at once, run the same way: BPF_PROG_TEST_RUN's loop and context reset, the part of the program's number that is not the program",
				Run: u.run(true)},
			&Benchmark{Name: wire.WorkloadBench(prog), Requires: []Requirement{req},
				Doc: "the user's program " + prog + " (--workload), BPF_PROG_TEST_RUN on the --packet input (default: a 64-byte Ethernet/IPv4/UDP packet); the kernel's per-run average, whole nanoseconds, including the test run's loop (see op=noop)",
				Run: u.run(false)})
	}
	for _, prog := range append(wire.Programs(timed), wire.Programs(verifyOnly)...) {
		out = append(out, workloadVerifier(prog, wire.WorkloadObject))
	}
	return out
}

// RegistryWith returns Registry with the benchmarks of the user's programs
// (wire.Plan.Workload and Verify; "" for none).
func RegistryWith(timed, verifyOnly string) []*Benchmark {
	return append(Registry(), workloadBenchmarks(timed, verifyOnly)...)
}

// userProgram is a user's program in the guest's files.
type userProgram struct {
	name, object, packet, maps string
}

// userRunsPerRound is the repetitions of one BPF_PROG_TEST_RUN call per
// round, as many operations as one bpf_loop run of the other families.
const userRunsPerRound = 10000

// maxPacketBytes bounds the --packet input (test runs take at most a page
// of XDP data in most kernels).
const maxPacketBytes = 4096

// maxVerifierLines is how many of the verifier log's last lines an error
// keeps.
const maxVerifierLines = 3

func (u *userProgram) run(noop bool) func(*Run) error {
	return func(r *Run) error {
		prog, closeAll, err := u.load(r, noop)
		if err != nil {
			return err
		}
		defer closeAll()
		packet, err := u.input()
		if err != nil {
			return err
		}
		r.Info(fmt.Sprintf("input: %d bytes", len(packet)))
		repeat := r.Params.Rounds * userRunsPerRound
		take := func() (Sample, error) {
			_, per, err := prog.Benchmark(packet, repeat, nil)
			if err != nil {
				return Sample{}, fmt.Errorf("test run of %s: %w", u.name, err)
			}
			return Sample{Ops: uint64(repeat), Elapsed: uint64(per.Nanoseconds()) * uint64(repeat)}, nil
		}
		if _, err := take(); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
		return reportSamples(r, take)
	}
}

// load loads the user's program (or a noop of its type), with its maps
// filled from the key/value file if there is one.
func (u *userProgram) load(r *Run, noop bool) (*ebpf.Program, func(), error) {
	spec, err := ebpf.LoadCollectionSpec(u.object)
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", u.object, err)
	}
	ps := spec.Programs[u.name]
	if ps == nil {
		return nil, nil, fmt.Errorf("the object has no program %q", u.name)
	}
	if noop {
		ret := int32(0)
		if ps.Type == ebpf.XDP {
			ret = 2 // XDP_PASS
		}
		p, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "lpmb_noop", Type: ps.Type, License: "GPL",
			Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, ret), asm.Return()}})
		if err != nil {
			return nil, nil, fmt.Errorf("load a noop %v program: %w", ps.Type, err)
		}
		return p, func() { p.Close() }, nil
	}
	for n := range spec.Programs {
		if n != u.name {
			delete(spec.Programs, n)
		}
	}
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		var verr *ebpf.VerifierError
		if errors.As(err, &verr) {
			r.Logf("verifier log:\n%+v", verr)
			return nil, nil, fmt.Errorf("the verifier rejected %s: %s", u.name, verifierTail(verr.Log))
		}
		return nil, nil, fmt.Errorf("load %s: %w", u.name, err)
	}
	if err := fillMapsFromFile(u.maps, coll.Maps); err != nil {
		coll.Close()
		return nil, nil, err
	}
	return coll.Programs[u.name], coll.Close, nil
}

// verifierTail is the last lines of a verifier log, joined on one line.
func verifierTail(log []string) string {
	var lines []string
	for _, l := range log {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	lines = lines[max(0, len(lines)-maxVerifierLines):]
	return strings.Join(lines, " | ")
}

// input returns the packet of the test runs: the --packet file, else
// defaultPacket.
func (u *userProgram) input() ([]byte, error) {
	f, err := os.Open(u.packet)
	if errors.Is(err, os.ErrNotExist) {
		return defaultPacket(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("read packet: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxPacketBytes+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("read packet: %w", err)
	case len(b) > maxPacketBytes:
		return nil, fmt.Errorf("packet of more than %d bytes", maxPacketBytes)
	case len(b) < 14:
		return nil, fmt.Errorf("packet of %d bytes: test runs need at least an Ethernet header (14)", len(b))
	}
	return b, nil
}

// defaultPacket is the input of a user's program without --packet: 64
// bytes of Ethernet, IPv4 (10.0.0.1 → 10.0.0.2, checksum set) and UDP
// (port 1024 → 53), zero payload.
func defaultPacket() []byte {
	p := make([]byte, 64)
	copy(p[0:6], []byte{0x02, 0, 0, 0, 0, 2})  // destination MAC
	copy(p[6:12], []byte{0x02, 0, 0, 0, 0, 1}) // source MAC
	binary.BigEndian.PutUint16(p[12:], 0x0800)
	ip := p[14:34]
	ip[0], ip[8], ip[9] = 0x45, 64, 17 // version 4, IHL 5; TTL; UDP
	binary.BigEndian.PutUint16(ip[2:], uint16(len(p)-14))
	copy(ip[12:16], []byte{10, 0, 0, 1})
	copy(ip[16:20], []byte{10, 0, 0, 2})
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(ip[i:]))
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(ip[10:], ^uint16(sum))
	udp := p[34:42]
	binary.BigEndian.PutUint16(udp[0:], 1024)
	binary.BigEndian.PutUint16(udp[2:], 53)
	binary.BigEndian.PutUint16(udp[4:], uint16(len(p)-34))
	return p
}

// maxMapLines bounds the key/value file.
const maxMapLines = 1 << 20

// fillMapsFromFile puts the key/value pairs of the file at path (absent:
// nothing to do) into maps. Each line is "MAP KEY VALUE", KEY and VALUE in
// hex, as many bytes as the map's key and value; blank lines and lines
// starting with # are skipped. A per-CPU map gets VALUE on every CPU.
func fillMapsFromFile(path string, maps map[string]*ebpf.Map) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read map entries: %w", err)
	}
	defer f.Close()
	return fillMaps(f, maps)
}

// fillMaps puts the key/value pairs read from r ("MAP KEY VALUE" lines, see
// fillMapsFromFile) into maps.
func fillMaps(r io.Reader, maps map[string]*ebpf.Map) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<16)
	for n := 1; sc.Scan(); n++ {
		if n > maxMapLines {
			return fmt.Errorf("map entries: more than %d lines", maxMapLines)
		}
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 {
			return fmt.Errorf("map entries line %d: want MAP KEY VALUE (hex), got %d fields", n, len(f))
		}
		m := maps[f[0]]
		if m == nil {
			return fmt.Errorf("map entries line %d: the program has no map %q", n, f[0])
		}
		key, kerr := hex.DecodeString(f[1])
		value, verr := hex.DecodeString(f[2])
		switch {
		case kerr != nil || verr != nil:
			return fmt.Errorf("map entries line %d: key and value must be hex: %v", n, errors.Join(kerr, verr))
		case len(key) != int(m.KeySize()) || len(value) != int(m.ValueSize()):
			return fmt.Errorf("map entries line %d: %d-byte key and %d-byte value; map %s wants %d and %d", n, len(key), len(value), f[0], m.KeySize(), m.ValueSize())
		}
		var err error
		if perCPU(m.Type()) {
			cpus, cerr := ebpf.PossibleCPU()
			if cerr != nil {
				return fmt.Errorf("map entries line %d: %w", n, cerr)
			}
			vals := make([][]byte, cpus)
			for i := range vals {
				vals[i] = value
			}
			err = m.Update(key, vals, ebpf.UpdateAny)
		} else {
			err = m.Update(key, value, ebpf.UpdateAny)
		}
		if err != nil {
			return fmt.Errorf("map entries line %d: update %s: %w", n, f[0], err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read map entries: %w", err)
	}
	return nil
}

// perCPU reports whether maps of type t hold one value per CPU.
func perCPU(t ebpf.MapType) bool {
	switch t {
	case ebpf.PerCPUHash, ebpf.PerCPUArray, ebpf.LRUCPUHash, ebpf.PerCPUCGroupStorage:
		return true
	}
	return false
}
