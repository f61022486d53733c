// Package config reads an lpmbisect configuration file: TOML that says, once,
// everything the command line can say about kernels, their builds, the
// benchmarks, the statistics and a bisection. kernels.example.toml at the
// repository root documents every key.
//
// A file only supplies defaults: a flag given on the command line always wins
// over the file, and the file wins over the built-in defaults. The mapping is
// one key to one flag (Setting), so the command line and the file can never
// mean different things.
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
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// File is a parsed configuration file.
type File struct {
	Measure Measure  `toml:"measure"`
	Bench   Bench    `toml:"bench"`
	Stats   Stats    `toml:"stats"`
	Build   Build    `toml:"build"`
	Bisect  Bisect   `toml:"bisect"`
	Kernels []Kernel `toml:"kernel"`

	// Path is the file the configuration was read from.
	Path string `toml:"-"`
	md   toml.MetaData
}

// Measure says how kernels are booted and how many boots are taken.
type Measure struct {
	Accel           string   `toml:"accel"`
	Boots           int      `toml:"boots"`
	MaxBoots        int      `toml:"max_boots"`
	Parallel        int      `toml:"parallel"`
	MemoryMB        int      `toml:"memory"`
	CPUs            int      `toml:"cpus"`
	BootTimeout     Duration `toml:"boot_timeout"`
	ProgressTimeout Duration `toml:"progress_timeout"`
	QEMU            string   `toml:"qemu"`
	CacheDir        string   `toml:"cache_dir"`
	Guest           string   `toml:"guest"`
	NoModules       bool     `toml:"no_modules"`
	Append          string   `toml:"append"`
}

// Bench selects the benchmarks the guest runs and their parameters.
type Bench struct {
	Select       string `toml:"select"`
	Samples      int    `toml:"samples"`
	Entries      int    `toml:"entries"`
	PrefixLen    int    `toml:"prefix_len"`
	BatchEntries int    `toml:"batch_entries"`
	Rounds       int    `toml:"rounds"`
}

// Stats are the levels of the statistics.
type Stats struct {
	Alpha     float64 `toml:"alpha"`
	MinEffect float64 `toml:"min_effect"` // percent
}

// Build says how a kernel source tree is configured and built.
type Build struct {
	Src       string   `toml:"src"`
	BuildDir  string   `toml:"build_dir"`
	Base      string   `toml:"base"`
	Fragments []string `toml:"fragments"`
	Make      string   `toml:"make"`
	MakeFlags []string `toml:"make_flags"`
	Jobs      int      `toml:"jobs"`
	Command   string   `toml:"command"`
}

// Bisect describes a bisection, over a git repository or prebuilt images.
type Bisect struct {
	Repo         string   `toml:"repo"`
	Good         string   `toml:"good"`
	Bad          string   `toml:"bad"`
	Reverse      bool     `toml:"reverse"`
	Images       []string `toml:"images"`
	State        string   `toml:"state"`
	RecheckBoots int      `toml:"recheck_boots"`
}

// Kernel is a kernel to compare or bisect over: a prebuilt image or package
// (Path) or a source tree to build (Src).
type Kernel struct {
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

// ErrUnknownKeys is wrapped by Load's error when the file has keys this
// version does not know.
var ErrUnknownKeys = errors.New("unknown keys")

// Load reads and checks a configuration file. Relative paths in it are made
// relative to the file's directory.
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

// Parse parses configuration text; relative paths are resolved against dir.
func Parse(text, dir string) (*File, error) {
	var f File
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
		}
		return nil, fmt.Errorf("%w: %s (kernels.example.toml lists every key)", ErrUnknownKeys, strings.Join(keys, ", "))
	}
	f.md = md
	if err := f.check(); err != nil {
		return nil, err
	}
	f.resolvePaths(dir)
	return &f, nil
}

// check rejects values that are wrong whatever the command.
func (f *File) check() error {
	for i, k := range f.Kernels {
		if (k.Path == "") == (k.Src == "") {
			return fmt.Errorf("kernel %d (%q): give exactly one of path (a prebuilt kernel) and src (a tree to build)", i+1, k.Name)
		}
	}
	return nil
}

func (f *File) resolvePaths(dir string) {
	abs := func(p *string) {
		if *p != "" && !filepath.IsAbs(*p) && !strings.HasPrefix(*p, "~") {
			*p = filepath.Join(dir, *p)
		}
	}
	for _, p := range []*string{&f.Measure.CacheDir, &f.Measure.Guest, &f.Build.Src, &f.Build.BuildDir, &f.Bisect.Repo, &f.Bisect.State} {
		abs(p)
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
}

// IsDefined reports whether the file sets key, written with dots
// ("measure.accel").
func (f *File) IsDefined(key string) bool {
	return f.md.IsDefined(strings.Split(key, ".")...)
}

// Setting ties a configuration key to the command-line flag it stands for.
type Setting struct {
	Key  string // "measure.accel"
	Flag string // "accel"
	// Value renders the file's value the way the flag is written; lists
	// give one string per element.
	Value func(*File) []string
}

func str(get func(*File) string) func(*File) []string {
	return func(f *File) []string { return []string{get(f)} }
}

func num(get func(*File) int) func(*File) []string {
	return func(f *File) []string { return []string{strconv.Itoa(get(f))} }
}

func float(get func(*File) float64) func(*File) []string {
	return func(f *File) []string { return []string{strconv.FormatFloat(get(f), 'g', -1, 64)} }
}

func boolean(get func(*File) bool) func(*File) []string {
	return func(f *File) []string { return []string{strconv.FormatBool(get(f))} }
}

func dur(get func(*File) Duration) func(*File) []string {
	return func(f *File) []string { return []string{get(f).String()} }
}

func list(get func(*File) []string) func(*File) []string {
	return get
}

// Settings lists every key that stands for a flag. Keys not listed here
// ([[kernel]] entries) are read by the commands that use them.
var Settings = []Setting{
	{"measure.accel", "accel", str(func(f *File) string { return f.Measure.Accel })},
	{"measure.boots", "boots", num(func(f *File) int { return f.Measure.Boots })},
	{"measure.max_boots", "max-boots", num(func(f *File) int { return f.Measure.MaxBoots })},
	{"measure.parallel", "parallel", num(func(f *File) int { return f.Measure.Parallel })},
	{"measure.memory", "memory", num(func(f *File) int { return f.Measure.MemoryMB })},
	{"measure.cpus", "cpus", num(func(f *File) int { return f.Measure.CPUs })},
	{"measure.boot_timeout", "boot-timeout", dur(func(f *File) Duration { return f.Measure.BootTimeout })},
	{"measure.progress_timeout", "progress-timeout", dur(func(f *File) Duration { return f.Measure.ProgressTimeout })},
	{"measure.qemu", "qemu", str(func(f *File) string { return f.Measure.QEMU })},
	{"measure.cache_dir", "cache-dir", str(func(f *File) string { return f.Measure.CacheDir })},
	{"measure.guest", "guest", str(func(f *File) string { return f.Measure.Guest })},
	{"measure.no_modules", "no-modules", boolean(func(f *File) bool { return f.Measure.NoModules })},
	{"measure.append", "append", str(func(f *File) string { return f.Measure.Append })},
	{"bench.select", "bench", str(func(f *File) string { return f.Bench.Select })},
	{"bench.samples", "samples", num(func(f *File) int { return f.Bench.Samples })},
	{"bench.entries", "entries", num(func(f *File) int { return f.Bench.Entries })},
	{"bench.prefix_len", "prefix-len", num(func(f *File) int { return f.Bench.PrefixLen })},
	{"bench.batch_entries", "batch-entries", num(func(f *File) int { return f.Bench.BatchEntries })},
	{"bench.rounds", "rounds", num(func(f *File) int { return f.Bench.Rounds })},
	{"stats.alpha", "alpha", float(func(f *File) float64 { return f.Stats.Alpha })},
	{"stats.min_effect", "min-effect", float(func(f *File) float64 { return f.Stats.MinEffect })},
	{"build.src", "src", str(func(f *File) string { return f.Build.Src })},
	{"build.build_dir", "build-dir", str(func(f *File) string { return f.Build.BuildDir })},
	{"build.base", "base-config", str(func(f *File) string { return f.Build.Base })},
	{"build.fragments", "fragment", list(func(f *File) []string { return f.Build.Fragments })},
	{"build.make", "make", str(func(f *File) string { return f.Build.Make })},
	{"build.make_flags", "make-flag", list(func(f *File) []string { return f.Build.MakeFlags })},
	{"build.jobs", "jobs", num(func(f *File) int { return f.Build.Jobs })},
	{"build.command", "build-command", str(func(f *File) string { return f.Build.Command })},
	{"bisect.repo", "repo", str(func(f *File) string { return f.Bisect.Repo })},
	{"bisect.good", "good", str(func(f *File) string { return f.Bisect.Good })},
	{"bisect.bad", "bad", str(func(f *File) string { return f.Bisect.Bad })},
	{"bisect.reverse", "reverse", boolean(func(f *File) bool { return f.Bisect.Reverse })},
	{"bisect.images", "images", list(func(f *File) []string { return f.Bisect.Images })},
	{"bisect.state", "state", str(func(f *File) string { return f.Bisect.State })},
	{"bisect.recheck_boots", "recheck-boots", num(func(f *File) int { return f.Bisect.RecheckBoots })},
}

// FlagValue is a flag value the file supplies.
type FlagValue struct {
	Key    string   // the configuration key
	Flag   string   // the flag name, without dashes
	Values []string // one for scalars, one per element for lists
}

// FlagValues returns the flag values the file sets, in the order of
// Settings.
func (f *File) FlagValues() []FlagValue {
	var out []FlagValue
	for _, s := range Settings {
		if f.IsDefined(s.Key) {
			out = append(out, FlagValue{Key: s.Key, Flag: s.Flag, Values: s.Value(f)})
		}
	}
	return out
}
