package fleet

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"
	"unicode"

	"github.com/riverqueue/river"

	"github.com/lpmbisect/lpmbisect/host/vmrunner"
	"github.com/lpmbisect/lpmbisect/wire"
)

// Job kinds, as River stores them. The version of the arguments is in the
// arguments (argsVersion), not in the kind, so that a worker that meets a
// newer job can say so instead of "unknown kind".
const (
	KindBoot  = "lpmbisect.boot"
	kindRound = "lpmbisect.round"
	kindBuild = "lpmbisect.build"
)

// argsVersion is the version of the job arguments this lpmbisect writes and
// reads. A worker refuses jobs of any other version.
const argsVersion = 1

// Bounds of job arguments, checked by Validate on both sides. Jobs come
// from the database, which any client can write: the worker trusts nothing
// in them.
const (
	// maxRoundBoots bounds the boots of one round job.
	maxRoundBoots = 16
	// maxKernelArgs bounds the kernel parameters of a boot; vmrunner
	// bounds their total length (x86's 2047 bytes).
	maxKernelArgs = 128
	// maxDeadline bounds every deadline and stuck time in a job.
	maxDeadline = 48 * time.Hour
	// minStuckAfter is the shortest stuck time a job may ask for: River's
	// rescuer looks every 30 s anyway.
	minStuckAfter = 5 * time.Second
)

// Default stuck times (Executor.StuckAfter, BuildRequest.StuckAfter): how
// long a job may run before River's rescuer takes it for dead and gives it
// to another worker. Its context is canceled at the same time.
const (
	DefaultBootStuckAfter  = 10 * time.Minute
	defaultBuildStuckAfter = 2 * time.Hour
)

// labels say which measure.Job a boot is, so the client can match the
// result to it; the worker only copies them into its log.
type labels struct {
	Run  string `json:"run"`            // the client's run (Executor.RunID)
	Side string `json:"side"`           // "A", "B", …
	Boot int    `json:"boot"`           // boot number within the side, from 1
	Pair int    `json:"pair,omitempty"` // round of a paired run
}

// bootSpec is one boot: content-addressed inputs and the vmrunner settings
// that change what the guest does or how long it may take. Paths, the QEMU
// binary and pinning are the worker's.
type bootSpec struct {
	Kernel     string   `json:"kernel"`    // SHA-256 of the bzImage blob
	Initramfs  string   `json:"initramfs"` // SHA-256 of the cpio blob
	KernelArgs []string `json:"kernel_args,omitempty"`
	MemoryMB   int      `json:"memory_mb,omitempty"` // 0: vmrunner's default
	CPUs       int      `json:"cpus,omitempty"`
	// CPUProfile names the CPU profile the boot emulates
	// (vmrunner.LookupCPUProfile; "" for the default model): the worker
	// boots its own definition of it, and the client checks the model its
	// result names.
	CPUProfile string `json:"cpu_profile,omitempty"`
	// Deadlines in milliseconds; 0 means vmrunner's default.
	BootDeadlineMS     int64 `json:"boot_deadline_ms,omitempty"`
	ProgressDeadlineMS int64 `json:"progress_deadline_ms,omitempty"`
	StartDeadlineMS    int64 `json:"start_deadline_ms,omitempty"`
	// Limits on what is read from the guest; 0 means vmrunner's default,
	// which is also the most a job may ask for.
	MaxLine  int    `json:"max_line,omitempty"`
	MaxBytes int    `json:"max_bytes,omitempty"`
	Labels   labels `json:"labels"`
}

// HostClass is the QEMU version and CPU model icount boots must run with:
// instruction counts compare only where both agree, so a boot job names
// them and only a worker of that class runs it.
type HostClass struct {
	QEMUVersion string `json:"qemu"`
	CPUModel    string `json:"cpu_model"`
}

func (c HostClass) String() string { return "QEMU " + c.QEMUVersion + " with CPU model " + c.CPUModel }

// bootArgs is a boot job: one boot, under icount, on any worker of the
// queue whose HostClass matches.
type bootArgs struct {
	Version int        `json:"v"`
	Accel   wire.Accel `json:"accel"`
	// Guest is the SHA-256 of the guest binary the client packed: a
	// worker whose own guest differs runs another lpmbisect.
	Guest        string    `json:"guest"`
	Class        HostClass `json:"class"`
	StuckAfterMS int64     `json:"stuck_after_ms"`
	Boot         bootSpec  `json:"boot"`
}

// Kind implements river.JobArgs.
func (bootArgs) Kind() string { return KindBoot }

// InsertOpts implements river.JobArgsWithInsertOpts: a boot is retried
// twice (a rescue counts), then it fails the client's run.
func (bootArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{MaxAttempts: 3} }

// roundArgs is a round job: the boots of one round of a wall-clock
// comparison, on one host, one after the other, or (Paired) the two of a
// pair side by side with paced guests, as measure.Paired runs them.
type roundArgs struct {
	Version      int        `json:"v"`
	Accel        wire.Accel `json:"accel"`
	Guest        string     `json:"guest"`
	StuckAfterMS int64      `json:"stuck_after_ms"`
	Paired       bool       `json:"paired,omitempty"`
	// Seed draws the turns of a paired round (measure.Paired.Seed).
	Seed  uint64     `json:"seed,omitempty"`
	Boots []bootSpec `json:"boots"`
}

// Kind implements river.JobArgs.
func (roundArgs) Kind() string { return kindRound }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (roundArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{MaxAttempts: 3} }

// buildArgs is a build job: a tree the worker knows by name, a commit, and
// the name of one of the worker's build configurations. The job carries
// no commands: what runs is the worker's.
type buildArgs struct {
	Version int    `json:"v"`
	Tree    string `json:"tree"`
	// Commit is a full commit id: the client resolves branch names, so
	// two identical build jobs are the same build (River's unique jobs
	// then share one).
	Commit       string `json:"commit"`
	Config       string `json:"config"`
	StuckAfterMS int64  `json:"stuck_after_ms"`
}

// Kind implements river.JobArgs.
func (buildArgs) Kind() string { return kindBuild }

// InsertOpts implements river.JobArgsWithInsertOpts: one build of a
// (tree, commit, configuration) at a time, shared by the clients that ask
// for it while it is queued, running or completed (River keeps completed
// jobs a day).
func (buildArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 3, UniqueOpts: river.UniqueOpts{ByArgs: true, ByQueue: true}}
}

// ArgsError is a job whose arguments a worker refuses: a permanent error
// that cancels the job (River's JobCancel), with Field and why.
type ArgsError struct {
	Kind  string
	Field string
	Err   error
}

func (e *ArgsError) Error() string {
	return fmt.Sprintf("%s job: %s: %v", e.Kind, e.Field, e.Err)
}

func (e *ArgsError) Unwrap() error { return e.Err }

// Errors wrapped by ArgsError.
var (
	// ErrArgsVersion: the job was written by an lpmbisect with other job
	// arguments.
	ErrArgsVersion = errors.New("arguments of another version")
	// ErrGuestMismatch: the job's guest binary is not the worker's (a
	// worker with another lpmbisect version).
	ErrGuestMismatch = errors.New("guest binary differs from this worker's")
	// ErrBadArgs: a value out of its bounds or malformed.
	ErrBadArgs = errors.New("invalid")
)

var (
	sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)
	commitHex = regexp.MustCompile(`^(?:[0-9a-f]{40}|[0-9a-f]{64})$`)
	shortName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	sideName  = regexp.MustCompile(`^[A-Za-z0-9]{1,16}$`)
	runName   = regexp.MustCompile(`^[A-Za-z0-9._-]{0,64}$`)
)

func argsErr(kind, field string, format string, args ...any) *ArgsError {
	return &ArgsError{Kind: kind, Field: field, Err: fmt.Errorf("%w: "+format, append([]any{ErrBadArgs}, args...)...)}
}

func checkVersion(kind string, v int) error {
	if v != argsVersion {
		return &ArgsError{Kind: kind, Field: "version", Err: fmt.Errorf("%w: version %d, this lpmbisect reads %d (client and worker run different lpmbisect versions: upgrade the older)", ErrArgsVersion, v, argsVersion)}
	}
	return nil
}

func checkSHA(kind, field, v string) error {
	if !sha256Hex.MatchString(v) {
		return argsErr(kind, field, "%q is not a SHA-256 in lower-case hex", clip(v))
	}
	return nil
}

func checkMS(kind, field string, ms int64) error {
	if ms < 0 || time.Duration(ms)*time.Millisecond > maxDeadline {
		return argsErr(kind, field, "%d ms: between 0 and %s", ms, maxDeadline)
	}
	return nil
}

func checkStuck(kind string, ms int64) error {
	d := time.Duration(ms) * time.Millisecond
	if d < minStuckAfter || d > maxDeadline {
		return argsErr(kind, "stuck_after_ms", "%d ms: between %s and %s", ms, minStuckAfter, maxDeadline)
	}
	return nil
}

// checkBootAccel accepts the accelerators a boot job may name: those of
// wire.Accels, not Auto.
func checkBootAccel(kind string, a wire.Accel) error {
	if !slices.Contains(wire.Accels, a) {
		return argsErr(kind, "accel", "%q: %s", clip(string(a)), wire.AccelNames())
	}
	return nil
}

// Validate checks the boot's values against their bounds.
func (b bootSpec) Validate(kind string, accel wire.Accel) error {
	if err := checkSHA(kind, "kernel", b.Kernel); err != nil {
		return err
	}
	if err := checkSHA(kind, "initramfs", b.Initramfs); err != nil {
		return err
	}
	if len(b.KernelArgs) > maxKernelArgs {
		return argsErr(kind, "kernel_args", "%d parameters, at most %d", len(b.KernelArgs), maxKernelArgs)
	}
	for _, a := range b.KernelArgs {
		if a == "" || len(a) > 2047 {
			return argsErr(kind, "kernel_args", "a parameter of %d bytes", len(a))
		}
		for _, r := range a {
			if unicode.IsControl(r) || unicode.IsSpace(r) && r != ' ' {
				return argsErr(kind, "kernel_args", "%q holds a control character", clip(a))
			}
		}
	}
	if b.CPUProfile != "" {
		p, err := vmrunner.LookupCPUProfile(b.CPUProfile)
		switch {
		case err != nil:
			return argsErr(kind, "cpu_profile", "%q is no CPU profile of this lpmbisect (run one lpmbisect version across the fleet)", clip(b.CPUProfile))
		case accel == wire.AccelKVM && !p.IsDefault():
			return argsErr(kind, "cpu_profile", "%s under kvm: %v", p.Name, vmrunner.ErrCPUProfileUnderKVM)
		}
	}
	switch {
	case b.MemoryMB != 0 && (b.MemoryMB < 128 || b.MemoryMB > 1<<20):
		return argsErr(kind, "memory_mb", "%d: between 128 and %d", b.MemoryMB, 1<<20)
	case b.CPUs < 0 || b.CPUs > 64:
		return argsErr(kind, "cpus", "%d: between 1 and 64", b.CPUs)
	case accel == wire.AccelIcount && b.CPUs > 1:
		return argsErr(kind, "cpus", "%d under icount, which runs one vCPU", b.CPUs)
	case b.MaxLine < 0 || b.MaxLine > vmrunner.DefaultLimits.MaxLine:
		return argsErr(kind, "max_line", "%d: between 0 and %d", b.MaxLine, vmrunner.DefaultLimits.MaxLine)
	case b.MaxBytes < 0 || b.MaxBytes > vmrunner.DefaultLimits.MaxBytes:
		return argsErr(kind, "max_bytes", "%d: between 0 and %d", b.MaxBytes, vmrunner.DefaultLimits.MaxBytes)
	}
	for field, ms := range map[string]int64{"boot_deadline_ms": b.BootDeadlineMS, "progress_deadline_ms": b.ProgressDeadlineMS, "start_deadline_ms": b.StartDeadlineMS} {
		if err := checkMS(kind, field, ms); err != nil {
			return err
		}
	}
	l := b.Labels
	switch {
	case !runName.MatchString(l.Run):
		return argsErr(kind, "labels.run", "%q: at most 64 letters, digits, '.', '_' or '-'", clip(l.Run))
	case !sideName.MatchString(l.Side):
		return argsErr(kind, "labels.side", "%q: 1 to 16 letters or digits", clip(l.Side))
	case l.Boot < 1 || l.Boot > 1_000_000:
		return argsErr(kind, "labels.boot", "%d: from 1", l.Boot)
	case l.Pair < 0 || l.Pair > 1_000_000:
		return argsErr(kind, "labels.pair", "%d: not negative", l.Pair)
	}
	return nil
}

// Validate checks a boot job's arguments.
func (a bootArgs) Validate() error {
	if err := checkVersion(KindBoot, a.Version); err != nil {
		return err
	}
	if err := checkBootAccel(KindBoot, a.Accel); err != nil {
		return err
	}
	if err := checkSHA(KindBoot, "guest", a.Guest); err != nil {
		return err
	}
	if err := checkStuck(KindBoot, a.StuckAfterMS); err != nil {
		return err
	}
	if a.Accel == wire.AccelIcount && (a.Class.QEMUVersion == "" || a.Class.CPUModel == "") {
		return argsErr(KindBoot, "class", "an icount boot names its QEMU version and CPU model")
	}
	if len(a.Class.QEMUVersion) > 64 || len(a.Class.CPUModel) > 64 {
		return argsErr(KindBoot, "class", "longer than 64 bytes")
	}
	return a.Boot.Validate(KindBoot, a.Accel)
}

// Validate checks a round job's arguments.
func (a roundArgs) Validate() error {
	if err := checkVersion(kindRound, a.Version); err != nil {
		return err
	}
	if err := checkBootAccel(kindRound, a.Accel); err != nil {
		return err
	}
	if err := checkSHA(kindRound, "guest", a.Guest); err != nil {
		return err
	}
	if err := checkStuck(kindRound, a.StuckAfterMS); err != nil {
		return err
	}
	if len(a.Boots) < 1 || len(a.Boots) > maxRoundBoots {
		return argsErr(kindRound, "boots", "%d boots: 1 to %d", len(a.Boots), maxRoundBoots)
	}
	if a.Paired {
		if len(a.Boots) != 2 || a.Boots[0].Labels.Pair < 1 || a.Boots[0].Labels.Pair != a.Boots[1].Labels.Pair {
			return argsErr(kindRound, "boots", "a paired round is two boots of one pair")
		}
		if a.Accel == wire.AccelIcount {
			return argsErr(kindRound, "paired", "icount boots are never paired")
		}
	}
	for _, b := range a.Boots {
		if err := b.Validate(kindRound, a.Accel); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks a build job's arguments.
func (a buildArgs) Validate() error {
	if err := checkVersion(kindBuild, a.Version); err != nil {
		return err
	}
	switch {
	case !shortName.MatchString(a.Tree):
		return argsErr(kindBuild, "tree", "%q: a name of letters, digits, '.', '_' or '-'", clip(a.Tree))
	case !shortName.MatchString(a.Config):
		return argsErr(kindBuild, "config", "%q: a name of letters, digits, '.', '_' or '-'", clip(a.Config))
	case !commitHex.MatchString(a.Commit):
		return argsErr(kindBuild, "commit", "%q: a full commit id in lower-case hex", clip(a.Commit))
	}
	return checkStuck(kindBuild, a.StuckAfterMS)
}

// stuckAfter is a job's stuck time, or def when the arguments carry none
// that is valid (the job then fails validation in Work anyway).
func stuckAfter(ms int64, def time.Duration) time.Duration {
	d := time.Duration(ms) * time.Millisecond
	if d < minStuckAfter || d > maxDeadline {
		return def
	}
	return d
}

// clip keeps untrusted values short in messages.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
