package vmrunner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lpmbisect/lpmbisect/internal/cachefile"
	"github.com/lpmbisect/lpmbisect/internal/words"
	"github.com/lpmbisect/lpmbisect/wire"
)

// KVMHost identifies what a verdict on KVM holds for: the host's kernel,
// the QEMU binary and the KVM device. A change of any of them (a new host
// kernel, QEMU upgraded, the KVM module reloaded or replaced) makes
// another host, which is probed again.
type KVMHost struct {
	Kernel string     `json:"kernel"` // the host kernel's release (uname -r)
	QEMU   QEMUBinary `json:"qemu"`
	Device KVMDevice  `json:"device"`
}

// QEMUBinary identifies a QEMU build on disk.
type QEMUBinary struct {
	Path    string    `json:"path"` // absolute, as found in PATH
	Version string    `json:"version"`
	Size    int64     `json:"size"`
	ModTime time.Time `json:"mtime"`
}

// KVMDevice identifies the KVM device node and the modules behind it.
type KVMDevice struct {
	Path string `json:"path"`
	// Dev is the node's major:minor, Inode and Changed its inode and
	// change time: the node is made anew when the module is loaded again.
	Dev     string    `json:"dev"`
	Inode   uint64    `json:"inode"`
	Changed time.Time `json:"changed"`
	// Modules are the host's loaded KVM modules (kvm, kvm_intel,
	// kvm_amd, kvm_pvm …), from /sys/module.
	Modules []string `json:"modules"`
}

// KVMVerdict is whether KVM ran guests on a host, as a probe (or a boot of
// a run) showed it, and as it is kept in the cache.
type KVMVerdict struct {
	Host  KVMHost `json:"host"`
	Works bool    `json:"works"`
	// Why says what showed it, in a clause (KVMProbeResult.Why).
	Why string `json:"why"`
	// Boots are the probe's boots; none when a boot of a run decided.
	Boots []KVMProbeBoot `json:"boots,omitempty"`
	// Took is how long the probe took.
	Took time.Duration `json:"took_ns"`
	At   time.Time     `json:"at"`
}

// KVMCheck says how to find whether KVM runs guests on this host.
type KVMCheck struct {
	QEMU   string // default DefaultQEMU
	Device string // default defaultKVMDevice
	// CacheDir keeps verdicts (under accel/), one per KVMHost; "" keeps
	// none.
	CacheDir string
	// Kernels gives the real kernels to probe with. It is called only
	// when a probe must run (the device opens and no verdict is kept), so
	// a kernel that must be unpacked first is unpacked only then. Nil, or
	// none given: no probe, and KVM is not known to work.
	Kernels func() ([]ProbeKernel, error)
	// Reprobe probes even when a verdict is kept.
	Reprobe bool
	// Deadline is the probe's (kvmProbe.Deadline).
	Deadline time.Duration
}

// KVMStatus is what this host's KVM does, and how that is known.
type KVMStatus struct {
	// Works says that a probe showed KVM running real kernels here.
	Works bool
	// Why says why, in a clause; with Source, the whole story.
	Why string
	// Opens says whether the device opens; OpenErr why not.
	Opens   bool
	OpenErr error
	Device  string
	// Verdict is the probe's, now or kept; nil when none decided (the
	// device does not open, or there was no kernel to probe with).
	Verdict *KVMVerdict
	// Cached says the verdict was kept from an earlier probe, in
	// CacheFile ("" without a cache); else it is the probe's run now.
	Cached    bool
	CacheFile string
}

// Source says where the verdict came from, for a log line: a probe run
// now, a kept one (and how to probe again), or "" when there is none.
func (s *KVMStatus) Source() string {
	switch {
	case s.Verdict == nil:
		return ""
	case s.Cached:
		return fmt.Sprintf("kept from the probe of %s for this host kernel, QEMU and KVM device; lpmbisect host --reprobe KERNEL probes again",
			s.Verdict.At.UTC().Format("2006-01-02 15:04 UTC"))
	}
	kept := ""
	if s.CacheFile != "" {
		kept = ", kept for this host kernel, QEMU and KVM device"
	}
	return fmt.Sprintf("probed now: %s in %.2f s%s", words.Plural(len(s.Verdict.Boots), "boot"), s.Verdict.Took.Seconds(), kept)
}

// CheckKVM finds whether KVM runs guests here: not when the device does
// not open (no probe, no QEMU started); else as the verdict kept for this
// KVMHost says, or, when none is kept (or Reprobe), as a probe of the
// kernels shows (kvmProbe.Probe), kept for the next time. Without a
// kernel to probe with and no verdict kept, or without a QEMU that tells
// its version, KVM is not known to work. Its errors: the kernels' own, a
// probe's (QEMU that cannot be started), and ctx's.
func CheckKVM(ctx context.Context, c KVMCheck) (*KVMStatus, error) {
	if c.Device == "" {
		c.Device = defaultKVMDevice
	}
	if c.QEMU == "" {
		c.QEMU = DefaultQEMU
	}
	st := &KVMStatus{Device: c.Device}
	if st.OpenErr = openKVM(c.Device); st.OpenErr != nil {
		st.Why = "no usable " + c.Device + ": " + st.OpenErr.Error()
		return st, nil
	}
	st.Opens = true
	host, err := identifyKVMHost(c.QEMU, c.Device)
	if err != nil { // no verdict can be kept or read, nor a probe run
		st.Why = c.Device + " opens, but KVM was not probed: " + err.Error()
		return st, nil
	}
	if c.CacheDir != "" {
		st.CacheFile = host.file(c.CacheDir)
	}
	if !c.Reprobe && st.CacheFile != "" {
		if v, err := readVerdict(st.CacheFile, host); err == nil {
			st.Verdict, st.Cached = v, true
			st.Works, st.Why = v.Works, verdictWhy(v, c.Device)
			return st, nil
		}
	}
	var kernels []ProbeKernel
	if c.Kernels != nil {
		if kernels, err = c.Kernels(); err != nil {
			return nil, err
		}
	}
	if len(kernels) == 0 {
		st.Why = c.Device + " opens, but KVM was not probed: no kernel to probe it with (a KVM that opens may still fail or hang every guest)"
		return st, nil
	}
	res, err := kvmProbe{QEMU: c.QEMU, Kernels: kernels, Deadline: c.Deadline}.Probe(ctx)
	if err != nil {
		return nil, err
	}
	st.Verdict = &KVMVerdict{Host: host, Works: res.Works, Why: res.Why, Boots: res.Boots, Took: res.Took, At: time.Now()}
	st.Works, st.Why = res.Works, verdictWhy(st.Verdict, c.Device)
	if st.CacheFile != "" {
		if err := writeVerdict(st.CacheFile, st.Verdict); err != nil {
			st.CacheFile = "" // not kept: the next run probes again
		}
	}
	return st, nil
}

// verdictWhy is the clause of a verdict's story.
func verdictWhy(v *KVMVerdict, device string) string {
	if v.Works {
		return "KVM runs guests here: " + v.Why
	}
	return device + " opens, but KVM does not run guests here: " + v.Why
}

// MarkBroken keeps, for this host, that KVM failed a boot of a run after
// its probe had passed (why: what the boot showed), so that the next run
// does not plan for KVM. It does nothing without a cache file.
func (s *KVMStatus) MarkBroken(why string) error {
	if s.CacheFile == "" || s.Verdict == nil {
		return nil
	}
	v := &KVMVerdict{Host: s.Verdict.Host, Why: "a boot under KVM failed after the probe had passed: " + why, At: time.Now()}
	return writeVerdict(s.CacheFile, v)
}

// file is where the verdict on h is kept under cacheDir.
func (h KVMHost) file(cacheDir string) string {
	data, err := json.Marshal(h)
	if err != nil {
		panic(err) // strings, numbers and times always encode
	}
	sum := sha256.Sum256(data)
	return filepath.Join(cacheDir, "accel", "kvm-"+words.ShortHash(hex.EncodeToString(sum[:]))+".json")
}

// maxVerdictFile bounds a kept verdict as read back.
const maxVerdictFile = 64 << 10

// readVerdict reads the verdict kept in path for host: an error when there
// is none, it does not decode, or it is another host's.
func readVerdict(path string, host KVMHost) (*KVMVerdict, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxVerdictFile+1))
	if err != nil {
		return nil, fmt.Errorf("read KVM verdict %s: %w", path, err)
	}
	if len(data) > maxVerdictFile {
		return nil, fmt.Errorf("read KVM verdict %s: longer than %d bytes", path, maxVerdictFile)
	}
	var v KVMVerdict
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("read KVM verdict %s: %w", path, err)
	}
	want, _ := json.Marshal(host)
	got, _ := json.Marshal(v.Host)
	if string(got) != string(want) {
		return nil, fmt.Errorf("read KVM verdict %s: kept for another host", path)
	}
	return &v, nil
}

func writeVerdict(path string, v *KVMVerdict) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return cachefile.WriteBytes(path, append(data, '\n'))
}

// identifyKVMHost identifies this host's kernel, the QEMU binary qemu (a
// path or a name in PATH) and the KVM device.
func identifyKVMHost(qemu, device string) (KVMHost, error) {
	var h KVMHost
	var uts unix.Utsname
	if err := unix.Uname(&uts); err != nil {
		return h, fmt.Errorf("host kernel release: %w", err)
	}
	h.Kernel = unix.ByteSliceToString(uts.Release[:])
	path, err := exec.LookPath(qemu)
	if err != nil {
		return h, ErrQEMUMissing
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	fi, err := os.Stat(path)
	if err != nil {
		return h, fmt.Errorf("identify QEMU: %w", err)
	}
	version, err := QEMUVersion(path)
	if err != nil {
		return h, err
	}
	h.QEMU = QEMUBinary{Path: path, Version: version, Size: fi.Size(), ModTime: fi.ModTime().UTC()}
	var st unix.Stat_t
	if err := unix.Stat(device, &st); err != nil {
		return h, fmt.Errorf("identify %s: %w", device, err)
	}
	h.Device = KVMDevice{Path: device, Dev: fmt.Sprintf("%d:%d", unix.Major(st.Rdev), unix.Minor(st.Rdev)), Inode: st.Ino,
		Changed: time.Unix(st.Ctim.Unix()).UTC(), Modules: kvmModules()}
	return h, nil
}

// kvmModules lists the host's loaded KVM modules.
func kvmModules() []string {
	entries, _ := os.ReadDir("/sys/module") // none readable: none known
	var out []string
	for _, e := range entries {
		if n := e.Name(); n == "kvm" || strings.HasPrefix(n, "kvm_") {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// AccelChoice is the accelerator of a run, decided once before anything
// of the run is planned.
type AccelChoice struct {
	Accel wire.Accel // never Auto
	// Line says what Auto chose and why, in one line; "" for an
	// accelerator asked for by name.
	Line string
	// KVM is what was found of KVM (nil when not looked at: tcg, icount).
	KVM *KVMStatus
}

// autoFallback is the accelerator Auto uses where KVM does not run guests:
// never TCG wall time, which measures the emulator and the host's load,
// while instruction counts do not move.
const autoFallback = wire.AccelIcount

// icountWhy is what the line about Auto's choice says icount gives.
const icountWhy = "using icount: instruction counts, deterministic"

// ChooseAccel decides a run's accelerator from the one requested, once,
// before anything of the run is planned. Auto is KVM when CheckKVM shows
// it running real kernels here, else icount, said in AccelChoice.Line. KVM
// asked for by name must open and must not have failed its probe (a
// *KVMUnusableError says why); without a kernel to probe with, the boots
// show it. TCG and icount are taken as they are.
func ChooseAccel(ctx context.Context, requested wire.Accel, c KVMCheck) (*AccelChoice, error) {
	switch requested {
	case wire.AccelAuto, wire.AccelKVM:
	default:
		return &AccelChoice{Accel: requested}, nil
	}
	st, err := CheckKVM(ctx, c)
	if err != nil {
		return nil, err
	}
	ch := &AccelChoice{Accel: autoFallback, KVM: st}
	source := ""
	if s := st.Source(); s != "" {
		source = " (" + s + ")"
	}
	if requested == wire.AccelKVM {
		switch {
		case !st.Opens:
			return nil, &KVMUnusableError{Reason: st.Why}
		case st.Verdict != nil && !st.Works:
			return nil, &KVMUnusableError{Reason: st.Why + source}
		}
		ch.Accel = wire.AccelKVM
		return ch, nil
	}
	if st.Works {
		ch.Accel = wire.AccelKVM
		ch.Line = "accel auto: using KVM: " + st.Verdict.Why + source
		return ch, nil
	}
	ch.Line = "accel auto: " + st.Why + source + "; " + icountWhy
	return ch, nil
}
