// Package config reads an lpmbisect configuration file: TOML that says, once,
// everything the command line can say about kernels, their builds, the
// benchmarks, the statistics, a bisection and nightly tracking.
// kernels.example.toml at the repository root documents every key.
//
// A File is also the command line's own record of its options: Defaults
// gives the built-in values, Load lays a file over them, and the CLI binds
// each flag to its field (Fields, with internal/cliflag), so a flag given
// on the command line wins over the file and the file over the built-in
// default, with the types kept all the way (a list stays a list). One key
// stands for one flag, declared once in its field's tags, so the command
// line and the file cannot mean different things.
//
// Unknown keys are errors, not warnings: a misspelt "min_efect" would
// otherwise silently leave the default in place and change a verdict.
// Relative paths in the file are relative to the file's directory, so a
// configuration kept beside its kernels works from any working directory.
package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/xrash/smetrics"

	"github.com/BurntSushi/toml"

	"github.com/lpmbisect/lpmbisect/stats/compare"
	"github.com/lpmbisect/lpmbisect/wire"
)

// File is a configuration: the built-in defaults, a file's values over them,
// and (in the CLI) the command line's over both.
type File struct {
	Measure Measure       `toml:"measure"`
	Bench   Bench         `toml:"bench"`
	Stats   Stats         `toml:"stats"`
	Build   Build         `toml:"build"`
	Bisect  Bisect        `toml:"bisect"`
	Nightly Nightly       `toml:"nightly"`
	Serve   Serve         `toml:"serve"`
	Report  Report        `toml:"report"`
	Series  []Series      `toml:"series"`
	Kernels []KernelEntry `toml:"kernel"`

	// Path is the file the configuration was read from ("" for none).
	Path string `toml:"-"`
}

// Measure says how kernels are booted and how many boots are taken.
type Measure struct {
	Accel           string   `toml:"accel" usage:"auto (KVM where it works, else icount), kvm, tcg (wall time under emulation) or icount (TCG counting instructions: deterministic, unit insn/op)"`
	Boots           int      `toml:"boots"`     // each command words its flag
	MaxBoots        int      `toml:"max_boots"` // each command words its flag
	Parallel        int      `toml:"parallel" usage:"boots at once under --accel icount (0: one per host CPU); wall-time boots never overlap"`
	MemoryMB        int      `toml:"memory" usage:"guest memory in MiB"`
	CPUs            int      `toml:"cpus" usage:"guest vCPUs"`
	BootTimeout     Duration `toml:"boot_timeout" usage:"deadline for the guest's first results"`
	ProgressTimeout Duration `toml:"progress_timeout" usage:"longest silence from a booted guest"`
	QEMU            string   `toml:"qemu" usage:"QEMU binary"`
	CacheDir        string   `toml:"cache_dir" env:"LPMBISECT_CACHE" usage:"cache for unpacked kernels and initramfs images (default: user cache dir)"`
	Guest           string   `toml:"guest" env:"LPMBISECT_GUEST" usage:"guest binary (default: lpmbisect-guest beside this executable)"`
	NoModules       bool     `toml:"no_modules" usage:"do not pack kernel modules (results then use virtio only if built in, else the serial fallback)"`
	Append          string   `toml:"append" usage:"extra kernel parameters, e.g. \"mitigations=off\""`
	CPUProfile      string   `toml:"cpu_profile" usage:"the production CPU whose identity tcg and icount boots give the kernel, which chooses its mitigations by it: a profile of lpmbisect list --cpu-profiles (zen2, skylake-server, …) or default; a profile makes auto icount"`
	NoMemory        bool     `toml:"no_memory" usage:"leave out the insight block's memory pass (under icount, cache and dTLB misses per operation from QEMU's TCG plugin in the first boot of each side)"`
	MemoryPlugin    string   `toml:"memory_plugin" env:"LPMBISECT_MEMORY_PLUGIN" usage:"the memory pass's QEMU plugin (default: memplugin/memcount.so in the cache directory, else in the user's cache directory, where scripts/setup builds it)"`
	NoCycles        bool     `toml:"no_cycles" usage:"leave out the memory pass's cycle model: its branch model (mispredictions per op), the warming of its caches and predictors by each benchmark's warm-up, the deferred work pass and est-cycles/op (docs/cycles.md); the pass then counts as it did without them"`
	NoDeferred      bool     `toml:"no_deferred" usage:"leave out the memory pass's deferred work pass (what operations leave for later, counted over a wait after them: deferred-insn/op; docs/cycles.md)"`
}

// Bench selects the benchmarks the guest runs and their parameters.
type Bench struct {
	Select string `toml:"select" flag:"bench" usage:"benchmarks: a preset (lookup, controls, lpm, syscall, batch, ringbuf, hash, bloom, storage, verifier, all; comma-separated) or a regexp over result names (see lpmbisect list)"`
	// Samples of 0 mean the accelerator's default (wire.DefaultSamples).
	Samples      int `toml:"samples" usage:"samples per benchmark per boot (0: the accelerator's default, 1 under icount, 5 under a wall clock)"`
	Entries      int `toml:"entries" usage:"map size: LPM trie, hash map and bloom filter entries (dense keys [0,N))"`
	PrefixLen    int `toml:"prefix_len" usage:"LPM key prefix length (2^prefix-len must be at least --entries)"`
	BatchEntries int `toml:"batch_entries" usage:"elements of the MapBatch maps"`
	// Rounds of 0 mean the accelerator's default (wire.DefaultRounds).
	Rounds int `toml:"rounds" usage:"test-run repetitions of 10000 ops per sample (0: the accelerator's default; other families scale from it)"`
}

// Stats are the levels of the statistics.
type Stats struct {
	Alpha     float64 `toml:"alpha"`      // each command words its flag
	MinEffect float64 `toml:"min_effect"` // percent; its flag also takes auto (ParseMinEffect)
	// Rule is how rows with deterministic counts (icount) are judged:
	// ruleAuto lets a jitter bound decide them from two boots a side
	// (compare.Options.Bounds), ruleStatistical always runs the
	// significance test, as under wall time.
	Rule string `toml:"rule" usage:"how deterministic (icount) rows are judged: auto (a calibrated jitter bound decides, from 2 boots a side) or statistical (always the significance test)"`
}

// Report shapes what the reports say, beyond the verdicts.
type Report struct {
	// VeristatEmit chooses the stats of the veristat format as veristat's
	// --emit does (report.ParseVeristatEmit); "" for every stat of
	// veristat's CSV.
	VeristatEmit string `toml:"veristat_emit" usage:"stats of --format veristat, comma-separated, as veristat's --emit takes them (file,prog,verdict,states is what BPF CI's veristat_compare.py reads; default: every stat of veristat's CSV)"`
}

// The values of Stats.Rule.
const (
	ruleAuto        = "auto"
	ruleStatistical = "statistical"
)

// Statistical reports whether the significance test judges every row,
// deterministic ones too (ruleStatistical).
func (s Stats) Statistical() bool { return s.Rule == ruleStatistical }

// Build says how a kernel source tree is configured and built.
type Build struct {
	Src       string   `toml:"src"` // build's own flag
	BuildDir  string   `toml:"build_dir" usage:"build directory (make O=), kept for incremental builds (default: SRC/.lpmbisect-build; give SRC itself to build in the tree)"`
	Base      string   `toml:"base" flag:"base-config" usage:"base configuration: a make target (tinyconfig, defconfig, …) or a config file such as /boot/config-$(uname -r)"`
	Fragments []string `toml:"fragments" flag:"fragment" usage:"config fragment merged over the base, repeatable; \"builtin\" is configs/lpmbisect.config (default: builtin)"`
	Make      string   `toml:"make" usage:"make program"`
	MakeFlags []string `toml:"make_flags" flag:"make-flag" usage:"argument passed to every make call, repeatable (CC=clang, LLVM=1, …)"`
	Jobs      int      `toml:"jobs" alias:"j" usage:"make -j (0: number of CPUs)"`
	Command   string   `toml:"command" flag:"build-command"` // the bisect commands' flag
}

// Bisect describes a bisection, over a git repository or prebuilt images.
type Bisect struct {
	Repo         string   `toml:"repo" usage:"kernel git repository to bisect"`
	Good         string   `toml:"good"` // each command words its flag
	Bad          string   `toml:"bad"`  // each command words its flag
	Reverse      bool     `toml:"reverse" usage:"find an improvement: the bad (newer) endpoint is the faster one"`
	Images       []string `toml:"images" usage:"ordered kernels to search instead of a repository: files, a directory, or a list file (repeatable)"`
	State        string   `toml:"state" usage:"state directory: measurements, kept kernels, step logs (default: <git-dir>/lpmbisect, or <cache-dir>/bisect for --images)"`
	RecheckBoots int      `toml:"recheck_boots" usage:"boots added to the culprit and its parent to re-check them (0: no re-check)"`
}

// Nightly says where nightly tracking keeps its history and what it does
// with a new change point.
type Nightly struct {
	// DB is the history database: a SQLite file ("" for one in the cache
	// directory) or a postgres:// URL shared by a team.
	DB string `toml:"db"`
	// State is where builds, bisections and run logs of the nights go (""
	// for <cache_dir>/nightly).
	State string `toml:"state"`
	// Notify is a shell command that gets every new change point's mail
	// body on its standard input ("" for none).
	Notify string `toml:"notify"`
	// Boots per kernel per night (the tip and the reference each).
	Boots int `toml:"boots"`
	// KeepRuns is how many nights' run directories and kept kernels stay
	// on disk per series; older ones are pruned (their results stay in
	// the history).
	KeepRuns int `toml:"keep_runs"`
	// Bisect turns the automatic bisection of new change points on.
	Bisect bool `toml:"bisect"`
}

// Serve is where lpmbisect serve listens and what its changes need.
type Serve struct {
	Listen    string   `toml:"listen" usage:"address to listen on: host:port (loopback by default; anything else exposes the history's pages)"`
	TokenFile string   `toml:"token_file" usage:"file whose first line is the token every change (a triage) needs (16 characters at least, not readable by every user); without it the pages are read-only"`
	HostNames []string `toml:"host_names" flag:"host-name" usage:"a name the pages are served under besides the listen address (and localhost on loopback), such as the name a TLS proxy in front serves; requests for other names are refused (repeatable)"`
}

// Series is a kernel nightly tracking follows: a git tree and branch, or a
// directory (or list file) where CI drops prebuilt kernels. Its keys
// override the [measure], [bench] and [stats] defaults for it.
type Series struct {
	Name         string  `toml:"name"`
	Repo         string  `toml:"repo"`
	Branch       string  `toml:"branch"`
	BuildCommand string  `toml:"build_command"`
	Images       string  `toml:"images"`
	Reference    string  `toml:"reference"`
	Bench        string  `toml:"bench"`
	Accel        string  `toml:"accel"`
	Boots        int     `toml:"boots"`
	MinEffect    float64 `toml:"min_effect"`
	Samples      int     `toml:"samples"`
}

// KernelEntry is a kernel to compare or to bisect over: a prebuilt image or
// package (Path) or a source tree to build with the [build] settings (Src).
type KernelEntry struct {
	Name string `toml:"name"`
	Path string `toml:"path"`
	Src  string `toml:"src"`
}

// Duration is a time.Duration written as a string ("90s", "2m").
type Duration struct{ time.Duration }

// UnmarshalText parses a duration such as "90s".
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("duration %q: %w (write e.g. \"90s\" or \"2m\")", b, err)
	}
	d.Duration = v
	return nil
}

// MarshalText writes the duration as "1m30s".
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// Defaults returns the built-in configuration.
func Defaults() File {
	plan := wire.DefaultPlan()
	return File{
		Measure: Measure{Accel: "auto", MaxBoots: compare.DefaultMaxBoots, MemoryMB: 1024, CPUs: 1, QEMU: "qemu-system-x86_64",
			BootTimeout: Duration{90 * time.Second}, ProgressTimeout: Duration{60 * time.Second}},
		Bench: Bench{Select: plan.Bench, Entries: plan.Entries, PrefixLen: plan.PrefixLen,
			BatchEntries: plan.BatchEntries},
		Stats:   Stats{Alpha: 0.05, MinEffect: 1, Rule: ruleAuto},
		Build:   Build{Base: "tinyconfig", Make: "make"},
		Bisect:  Bisect{RecheckBoots: 4},
		Nightly: Nightly{Boots: 2, KeepRuns: 14, Bisect: true},
		Serve:   Serve{Listen: "127.0.0.1:8080"},
	}
}

// ErrUnknownKeys is wrapped by Load's error when the file has keys this
// version does not know.
var ErrUnknownKeys = errors.New("unknown keys")

// Load reads and checks a configuration file, over the defaults. Relative
// paths in it are made relative to the file's directory.
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	f, err := Parse(string(data), filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	f.Path = path
	return f, nil
}

// Parse parses configuration text over the defaults; relative paths are
// resolved against dir.
func Parse(text, dir string) (*File, error) {
	f := Defaults()
	md, err := toml.Decode(text, &f)
	if err != nil {
		var perr toml.ParseError
		if errors.As(err, &perr) {
			return nil, fmt.Errorf("line %d: %s", perr.Position.Line, perr.Message)
		}
		return nil, err
	}
	if und := md.Undecoded(); len(und) > 0 {
		keys := make([]string, len(und))
		for i, k := range und {
			keys[i] = k.String()
			if near := nearestKey(keys[i]); near != "" {
				keys[i] += " (did you mean " + near + "?)"
			}
		}
		return nil, fmt.Errorf("%w: %s (kernels.example.toml lists every key)", ErrUnknownKeys, strings.Join(keys, ", "))
	}
	if err := f.check(); err != nil {
		return nil, err
	}
	f.resolvePaths(dir)
	return &f, nil
}

// check rejects values that are wrong whatever the command.
func (f *File) check() error {
	if err := f.Stats.checkRule(); err != nil {
		return err
	}
	for i, k := range f.Kernels {
		if (k.Path == "") == (k.Src == "") {
			return fmt.Errorf("kernel %d (%q): give exactly one of path (a prebuilt kernel) and src (a tree to build)", i+1, k.Name)
		}
	}
	names := map[string]bool{}
	for i, s := range f.Series {
		switch {
		case s.Name == "" || strings.ContainsAny(s.Name, "/\x00") || s.Name != strings.TrimSpace(s.Name):
			return fmt.Errorf("series %d: name %q: give each series a name without slashes", i+1, s.Name)
		case names[s.Name]:
			return fmt.Errorf("series %q appears twice: names identify a series' history", s.Name)
		case (s.Repo == "") == (s.Images == ""):
			return fmt.Errorf("series %q: give exactly one of repo (a git tree) and images (a directory or list of prebuilt kernels)", s.Name)
		case s.Reference == "":
			return fmt.Errorf("series %q: no reference kernel (measured beside every night's tip)", s.Name)
		case s.Images != "" && (s.Branch != "" || s.BuildCommand != ""):
			return fmt.Errorf("series %q: branch and build_command belong to a repo series, not to images", s.Name)
		}
		names[s.Name] = true
	}
	return nil
}

func (f *File) resolvePaths(dir string) {
	abs := func(p *string) {
		if *p != "" && !filepath.IsAbs(*p) && !strings.HasPrefix(*p, "~") && !strings.Contains(*p, "://") {
			*p = filepath.Join(dir, *p)
		}
	}
	for _, p := range []*string{&f.Measure.CacheDir, &f.Measure.Guest, &f.Build.Src, &f.Build.BuildDir, &f.Bisect.Repo, &f.Bisect.State, &f.Nightly.State, &f.Serve.TokenFile} {
		abs(p)
	}
	if f.Nightly.DB != "" {
		abs(&f.Nightly.DB)
	}
	// A base config is a file or a make target such as tinyconfig.
	if b := f.Build.Base; strings.ContainsRune(b, '/') || strings.HasPrefix(b, ".") {
		abs(&f.Build.Base)
	} else if b != "" {
		if _, err := os.Stat(filepath.Join(dir, b)); err == nil {
			abs(&f.Build.Base)
		}
	}
	for i := range f.Build.Fragments {
		if f.Build.Fragments[i] != "builtin" {
			abs(&f.Build.Fragments[i])
		}
	}
	for i := range f.Bisect.Images {
		abs(&f.Bisect.Images[i])
	}
	for i := range f.Kernels {
		abs(&f.Kernels[i].Path)
		abs(&f.Kernels[i].Src)
	}
	for i := range f.Series {
		s := &f.Series[i]
		abs(&s.Repo)
		abs(&s.Images)
		abs(&s.Reference)
	}
}

// Field is a key of a File as the command line sees it. A key's tags
// declare it once for the file, the flag and its help: toml (the key),
// flag (the flag's name when it is not the key's with dashes, FlagName),
// usage (its help; none for a key whose flag each command words itself),
// alias and env.
type Field struct {
	Key         string // "measure.cache_dir"
	Flag, Usage string
	Alias, Env  string
	Ptr         any // into the File: *string, *int, *float64, *bool, *time.Duration, *[]string
}

// fields walks the keys of the File v (a slice section's keys have no Ptr).
func fields(v reflect.Value) []Field {
	var out []Field
	t := v.Type()
	for i := range t.NumField() {
		sec := t.Field(i).Tag.Get("toml")
		if sec == "" || sec == "-" {
			continue
		}
		st, sv := t.Field(i).Type, v.Field(i)
		if st.Kind() == reflect.Slice {
			st, sv = st.Elem(), reflect.Value{}
		}
		for j := range st.NumField() {
			tag := st.Field(j).Tag
			name := tag.Get("toml")
			if name == "" || name == "-" {
				continue
			}
			fd := Field{Key: sec + "." + name, Flag: tag.Get("flag"), Usage: tag.Get("usage"), Alias: tag.Get("alias"), Env: tag.Get("env")}
			if fd.Flag == "" {
				fd.Flag = strings.ReplaceAll(name, "_", "-")
			}
			if sv.IsValid() {
				fd.Ptr = sv.Field(j).Addr().Interface()
				if d, ok := fd.Ptr.(*Duration); ok {
					fd.Ptr = &d.Duration
				}
			}
			out = append(out, fd)
		}
	}
	return out
}

// Keys lists every key a file may set, written with dots ("measure.accel",
// "series.name"), in the order of the File's fields.
func Keys() []string {
	var keys []string
	for _, fd := range fields(reflect.ValueOf(&File{}).Elem()) {
		keys = append(keys, fd.Key)
	}
	return keys
}

// Fields returns the fields of f that names name, bound to f's values:
// for a key ("measure.boots") that key, for a section ("bench") those of
// its keys that have a usage. An unknown name panics: it is a mistake of
// the caller's code, not of its input.
func (f *File) Fields(names ...string) []Field {
	all := fields(reflect.ValueOf(f).Elem())
	var out []Field
	for _, name := range names {
		n := len(out)
		for _, fd := range all {
			if fd.Key == name || (strings.HasPrefix(fd.Key, name+".") && fd.Usage != "") {
				out = append(out, fd)
			}
		}
		if len(out) == n {
			panic("config: no key or section " + name)
		}
	}
	return out
}

// FlagName is the flag that sets the value named name: a key's flag
// ("bench.select": "bench"), else, for a key or a parameter of the same
// name (a wire parameter, a measure option), its name with dashes
// ("prefix_len": "prefix-len").
func FlagName(name string) string {
	for _, fd := range fields(reflect.ValueOf(&File{}).Elem()) {
		if fd.Key == name {
			return fd.Flag
		}
	}
	_, short, ok := strings.Cut(name, ".")
	if !ok {
		short = name
	}
	return strings.ReplaceAll(short, "_", "-")
}

// ValueError is a key's value that no command can use.
type ValueError struct {
	Key    string // "stats.alpha"
	Detail string // the value and why it is wrong: "0 must be between 0 and 1"
}

func (e *ValueError) Error() string { return e.Key + " " + e.Detail }

// Check rejects levels of the statistics that no comparison can use.
func (s Stats) Check() error {
	if err := s.checkRule(); err != nil {
		return err
	}
	if !(s.Alpha > 0 && s.Alpha < 1) {
		return &ValueError{"stats.alpha", fmt.Sprintf("%v must be between 0 and 1", s.Alpha)}
	}
	return nil
}

// Check rejects build settings that no build can use.
func (b Build) Check() error {
	if b.Jobs < 0 {
		return &ValueError{"build.jobs", "must not be negative"}
	}
	return nil
}

func (s Stats) checkRule() error {
	if s.Rule != ruleAuto && s.Rule != ruleStatistical {
		return &ValueError{"stats.rule", fmt.Sprintf("%q: use %s (a jitter bound decides deterministic rows) or %s (always the significance test)", s.Rule, ruleAuto, ruleStatistical)}
	}
	return nil
}

// ParseMinEffect reads a minimum effect as the command line gives it: a
// percentage, or "auto" (each benchmark's calibrated floor, at least
// floor percent) or "auto:PCT" (at least PCT). It reports whether the
// floors are calibrated.
func ParseMinEffect(v string, floor float64) (pct float64, auto bool, err error) {
	num := v
	if rest, ok := strings.CutPrefix(v, "auto"); ok {
		auto, num = true, strings.TrimPrefix(rest, ":")
		if num == "" {
			num = strconv.FormatFloat(floor, 'g', -1, 64)
		}
	}
	pct, err = strconv.ParseFloat(num, 64)
	if err != nil || !(pct > 0 && pct < 100) {
		return 0, false, &ValueError{"stats.min_effect", fmt.Sprintf("%q: give a percentage between 0 and 100, auto, or auto:PCT", v)}
	}
	return pct, auto, nil
}

// nearestKey is the known key a misspelt one most likely meant: the most
// similar of its section (Jaro-Winkler, as urfave/cli suggests flags),
// "" when none is close.
func nearestKey(key string) string {
	sec, _, _ := strings.Cut(key, ".")
	sec = strings.TrimSuffix(sec, "]")
	best, score := "", 0.85
	for _, k := range Keys() {
		if s, _, _ := strings.Cut(k, "."); s != sec {
			continue
		}
		if d := smetrics.JaroWinkler(key, k, 0.7, 4); d > score {
			best, score = k, d
		}
	}
	return best
}

// KernelInputs returns the kernels of a command that takes n: args when
// the line gave some, else the first n [[kernel]] entries when the file
// has that many, a src entry's tree built by build (which returns the
// KERNEL it built). A count other than n is the caller's to refuse.
func (f *File) KernelInputs(args []string, n int, build func(src string) (string, error)) ([]string, error) {
	if len(args) > 0 || len(f.Kernels) < n {
		return args, nil
	}
	var out []string
	for _, k := range f.Kernels[:n] {
		in := k.Path
		if k.Src != "" {
			var err error
			if in, err = build(k.Src); err != nil {
				return nil, err
			}
		}
		out = append(out, in)
	}
	return out, nil
}

// Errors of File.BisectImages: the [bisect] keys do not say one search.
var (
	ErrRepoAndImages   = errors.New("bisect: a repository or images, not both")
	ErrNothingToBisect = errors.New("bisect: neither a repository nor images")
	ErrNoRevisions     = errors.New("bisect: a repository needs the good and the bad revision")
)

// BisectImages returns the kernels a bisection searches in order, none when
// it searches the revisions good..bad of repo: images, else the [[kernel]]
// entries when no repo is given. It checks that the [bisect] keys say one
// search.
func (f *File) BisectImages() ([]string, error) {
	b := f.Bisect
	images := b.Images
	if len(images) == 0 && b.Repo == "" {
		for _, k := range f.Kernels {
			images = append(images, k.Path)
		}
	}
	switch {
	case len(images) > 0 && b.Repo != "":
		return nil, ErrRepoAndImages
	case len(images) == 0 && b.Repo == "":
		return nil, ErrNothingToBisect
	case b.RecheckBoots < 0:
		return nil, &ValueError{"bisect.recheck_boots", "must not be negative"}
	case len(images) == 0 && (b.Good == "" || b.Bad == ""):
		return nil, ErrNoRevisions
	}
	return images, nil
}

// ForSeries returns the configuration a series is measured with: this one
// with the series' own keys laid over [measure], [bench] and [stats], and
// nightly's boots per night as the boots of every look.
func (f *File) ForSeries(s Series) File {
	c := *f
	if s.Bench != "" {
		c.Bench.Select = s.Bench
	}
	if s.Accel != "" {
		c.Measure.Accel = s.Accel
	}
	if s.Samples != 0 {
		c.Bench.Samples = s.Samples
	}
	if s.MinEffect != 0 {
		c.Stats.MinEffect = s.MinEffect
	}
	c.Measure.Boots = f.Nightly.Boots
	if s.Boots != 0 {
		c.Measure.Boots = s.Boots
	}
	if s.BuildCommand != "" {
		c.Build.Command = s.BuildCommand
	}
	return c
}
