package main

import (
	"embed"
	"errors"
	"log"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/lpmbisect/lpmbisect/config"
	"github.com/lpmbisect/lpmbisect/internal/cliflag"
	"github.com/lpmbisect/lpmbisect/measure"
	"github.com/lpmbisect/lpmbisect/wire"
)

// opt is a flag bound to the field it sets (see cliflag).
type opt = cliflag.Flag

// command is a CLI command: its flags are bound to fields, its long help is
// help/<name>.txt.
func command(name, usage, args string, opts []opt, action func(*cli.Context) error) *cli.Command {
	flags, setLists := cliflag.Bind(opts)
	return &cli.Command{
		Name: name, Usage: usage, ArgsUsage: args, Description: help(name), Flags: flags, OnUsageError: onUsageError,
		Action: func(c *cli.Context) error { setLists(c); return action(c) },
	}
}

//go:embed help
var helpFiles embed.FS

func help(name string) string {
	data, err := helpFiles.ReadFile("help/" + name + ".txt")
	if err != nil {
		panic(err) // a command without its help file is a build mistake
	}
	return strings.TrimSpace(string(data))
}

// run holds what a command's flags set that a configuration file does not.
type run struct {
	*config.File
	runDir, out, html, format, failOn, fault, good, bad, src string
	minEffect                                                string // --min-effect: a percentage, "auto" or "auto:PCT"
	seed                                                     uint64
	verbose, paired, noControls, autoMinEffect               bool
	log                                                      *log.Logger
	remote                                                   *remote // --db, --queue: boots on a fleet (fleet.go)

	insight insightFlags // --no-insight, --symbols, --debug-a, --debug-b (insight.go)
}

// vmOpts are the flags of the commands that boot kernels.
func vmOpts(r *run) []opt {
	m, b := &r.Measure, &r.Bench
	return []opt{
		{Name: "accel", Ptr: &m.Accel, Usage: "auto, kvm, tcg or icount (TCG counting instructions: deterministic, unit insn/op)"},
		{Name: "bench", Ptr: &b.Select, Usage: "benchmarks: a preset (lookup, controls, lpm, syscall, batch, ringbuf, all; comma-separated) or a regexp over result names (see lpmbisect list)"},
		{Name: "samples", Ptr: &b.Samples, Usage: "samples per benchmark per boot"},
		{Name: "entries", Ptr: &b.Entries, Usage: "LPM trie entries (dense keys [0,N))"},
		{Name: "prefix-len", Ptr: &b.PrefixLen, Usage: "LPM key prefix length (2^prefix-len must be at least --entries)"},
		{Name: "batch-entries", Ptr: &b.BatchEntries, Usage: "elements of the MapBatch maps"},
		{Name: "rounds", Ptr: &b.Rounds, Usage: "test-run repetitions of 10000 ops per sample (0: the accelerator's default; other families scale from it)"},
		{Name: "memory", Ptr: &m.MemoryMB, Usage: "guest memory in MiB"},
		{Name: "cpus", Ptr: &m.CPUs, Usage: "guest vCPUs"},
		{Name: "parallel", Ptr: &m.Parallel, Usage: "boots at once under --accel icount (0: one per host CPU); wall-time boots never overlap"},
		{Name: "boot-timeout", Ptr: &m.BootTimeout.Duration, Usage: "deadline for the guest's first results"},
		{Name: "progress-timeout", Ptr: &m.ProgressTimeout.Duration, Usage: "longest silence from a booted guest"},
		{Name: "cache-dir", Ptr: &m.CacheDir, Env: "LPMBISECT_CACHE", Usage: "cache for unpacked kernels and initramfs images (default: user cache dir)"},
		{Name: "run-dir", Ptr: &r.runDir, Usage: "where console logs of each boot go (default: <cache-dir>/runs/<time>)"},
		{Name: "guest", Ptr: &m.Guest, Env: "LPMBISECT_GUEST", Usage: "guest binary (default: lpmbisect-guest beside this executable)"},
		{Name: "qemu", Ptr: &m.QEMU, Usage: "QEMU binary"},
		{Name: "append", Ptr: &m.Append, Usage: "extra kernel parameters, e.g. \"mitigations=off\""},
		{Name: "no-modules", Ptr: &m.NoModules, Usage: "do not pack kernel modules (results then use virtio only if built in, else the serial fallback)"},
		{Name: "verbose", Ptr: &r.verbose, Alias: "v", Usage: "print QEMU command lines and decisions"},
		{Name: "fault", Ptr: &r.fault, Hidden: true, Usage: "test-only guest misbehaviour"},
		configOpt(r),
	}
}

// minEffectOpt is --min-effect: a percentage, or auto (each benchmark's
// calibrated floor, at least the configuration's minimum effect) or
// auto:PCT (at least PCT).
func minEffectOpt(r *run) opt {
	r.minEffect = strconv.FormatFloat(r.Stats.MinEffect, 'g', -1, 64)
	return opt{Name: "min-effect", Ptr: &r.minEffect, Usage: "smallest change that counts, in percent (DIFFERENT needs more, SAME excludes it); auto: each benchmark's calibrated floor, at least the default (auto:PCT: at least PCT; see lpmbisect calibrate)"}
}

// parseMinEffect reads --min-effect into the statistics; it reports whether
// the floors are calibrated (auto).
func (r *run) parseMinEffect() (auto bool, err error) {
	v := r.minEffect
	if rest, ok := strings.CutPrefix(v, "auto"); ok {
		auto, v = true, strings.TrimPrefix(rest, ":")
		if v == "" {
			v = strconv.FormatFloat(r.Stats.MinEffect, 'g', -1, 64)
		}
	}
	pct, err := strconv.ParseFloat(v, 64)
	if err != nil || !(pct > 0 && pct < 100) {
		return false, usageError("--min-effect %q: give a percentage between 0 and 100, auto, or auto:PCT", r.minEffect)
	}
	r.Stats.MinEffect = pct
	return auto, nil
}

// ruleOpt is --rule: how rows with deterministic counts are judged.
func ruleOpt(r *run) opt {
	return opt{Name: "rule", Ptr: &r.Stats.Rule, Usage: "how deterministic (icount) rows are judged: auto (a calibrated jitter bound decides, from 2 boots a side) or statistical (always the significance test)"}
}

// checkRule rejects a --rule other than auto and statistical.
func (r *run) checkRule() error {
	if r.Stats.Rule != config.RuleAuto && r.Stats.Rule != config.RuleStatistical {
		return usageError("--rule %q: use auto (a jitter bound decides deterministic rows) or statistical (always the significance test)", r.Stats.Rule)
	}
	return nil
}

func configOpt(r *run) opt {
	return opt{Name: "config", Ptr: &r.Path, Usage: "TOML configuration file; flags given on the command line win (see kernels.example.toml)"}
}

// verdictOpts shape verdicts and reports (compare and stat).
func verdictOpts(r *run) []opt {
	return []opt{
		minEffectOpt(r),
		{Name: "alpha", Ptr: &r.Stats.Alpha, Usage: "family-wise error rate of DIFFERENT claims (and of each SAME claim)"},
		ruleOpt(r),
		{Name: "fail-on", Ptr: &r.failOn, Usage: "what fails the exit code: regression (only a change for the worse) or change (any)"},
		{Name: "format", Ptr: &r.format, Usage: "report on stdout: text, markdown, json"},
		{Name: "html", Ptr: &r.html, Usage: "also write an HTML report with SVG plots of every boot to this file"},
		{Name: "no-controls", Ptr: &r.noControls, Usage: "do not run the noop and baseline controls alongside (stat: treat them as ordinary benchmarks)"},
	}
}

// flagOf names the flag behind a parameter of the guest's plan or an
// option of measure.
var flagOf = map[string]string{
	"bench": "bench", "samples": "samples", "entries": "entries", "rounds": "rounds", "prefix_len": "prefix-len",
	"batch_entries": "batch-entries", "fault": "fault", "accel": "accel",
	"cpus": "cpus", "memory": "memory", "parallel": "parallel", "cache directory": "cache-dir", "guest": "guest",
}

// flagError turns a library error about an option into a usage error that
// names its flag.
func flagError(err error) error {
	var pe *wire.ParamError
	var oe *measure.OptionError
	switch {
	case errors.As(err, &pe):
		name := pe.Param.Name()
		return usageError("--%s%s", flagOf[name], strings.TrimPrefix(pe.Error(), name))
	case errors.As(err, &oe) && errors.Is(err, measure.ErrIcountCPUs):
		return usageError("--cpus: %v (give --cpus 1)", oe.Err)
	case errors.As(err, &oe):
		return usageError("--%s: %v", flagOf[oe.Option], oe.Err)
	}
	return err
}
