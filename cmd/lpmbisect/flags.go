package main

import (
	"embed"
	"errors"
	"fmt"
	"log"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/lpmbisect/lpmbisect/config"
	"github.com/lpmbisect/lpmbisect/measure"
	"github.com/lpmbisect/lpmbisect/wire"
)

// opt ties a flag to the field it sets: the field holds the built-in
// default with the configuration file laid over it (config.File), the flag
// shows that as its default, and parsing writes the command line's value
// into the field. So a flag given wins over the file, which wins over the
// default, and every type stays what it is.
type opt struct {
	name, usage string
	ptr         any // *string, *int, *uint64, *float64, *bool, *time.Duration, *[]string
	alias, env  string
	hidden      bool
}

func (o opt) flag() cli.Flag {
	var aliases, envs []string
	if o.alias != "" {
		aliases = []string{o.alias}
	}
	if o.env != "" {
		envs = []string{o.env}
	}
	switch p := o.ptr.(type) {
	case *string:
		return &cli.StringFlag{Name: o.name, Usage: o.usage, Aliases: aliases, EnvVars: envs, Hidden: o.hidden, Value: *p, Destination: p}
	case *int:
		return &cli.IntFlag{Name: o.name, Usage: o.usage, Aliases: aliases, Hidden: o.hidden, Value: *p, Destination: p}
	case *uint64:
		return &cli.Uint64Flag{Name: o.name, Usage: o.usage, Value: *p, Destination: p}
	case *float64:
		return &cli.Float64Flag{Name: o.name, Usage: o.usage, Value: *p, Destination: p}
	case *bool:
		return &cli.BoolFlag{Name: o.name, Usage: o.usage, Aliases: aliases, Value: *p, Destination: p}
	case *time.Duration:
		return &cli.DurationFlag{Name: o.name, Usage: o.usage, Value: *p, Destination: p}
	case *[]string:
		return &cli.StringSliceFlag{Name: o.name, Usage: o.usage, Value: cli.NewStringSlice(*p...)}
	}
	panic(fmt.Sprintf("flag --%s: no flag for %T", o.name, o.ptr))
}

// command is a CLI command: its flags are bound to fields, its long help is
// help/<name>.txt.
func command(name, usage, args string, opts []opt, action func(*cli.Context) error) *cli.Command {
	var flags []cli.Flag
	for _, o := range opts {
		flags = append(flags, o.flag())
	}
	return &cli.Command{
		Name: name, Usage: usage, ArgsUsage: args, Description: help(name), Flags: flags, OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			for _, o := range opts { // lists have no Destination in urfave/cli v2
				if p, ok := o.ptr.(*[]string); ok && c.IsSet(o.name) {
					*p = c.StringSlice(o.name)
				}
			}
			return action(c)
		},
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
		{name: "accel", ptr: &m.Accel, usage: "auto, kvm, tcg or icount (TCG counting instructions: deterministic, unit insn/op)"},
		{name: "bench", ptr: &b.Select, usage: "benchmarks: a preset (lookup, controls, lpm, syscall, batch, ringbuf, all; comma-separated) or a regexp over result names (see lpmbisect list)"},
		{name: "samples", ptr: &b.Samples, usage: "samples per benchmark per boot"},
		{name: "entries", ptr: &b.Entries, usage: "LPM trie entries (dense keys [0,N))"},
		{name: "prefix-len", ptr: &b.PrefixLen, usage: "LPM key prefix length (2^prefix-len must be at least --entries)"},
		{name: "batch-entries", ptr: &b.BatchEntries, usage: "elements of the MapBatch maps"},
		{name: "rounds", ptr: &b.Rounds, usage: "test-run repetitions of 10000 ops per sample (0: the accelerator's default; other families scale from it)"},
		{name: "memory", ptr: &m.MemoryMB, usage: "guest memory in MiB"},
		{name: "cpus", ptr: &m.CPUs, usage: "guest vCPUs"},
		{name: "parallel", ptr: &m.Parallel, usage: "boots at once under --accel icount (0: one per host CPU); wall-time boots never overlap"},
		{name: "boot-timeout", ptr: &m.BootTimeout.Duration, usage: "deadline for the guest's first results"},
		{name: "progress-timeout", ptr: &m.ProgressTimeout.Duration, usage: "longest silence from a booted guest"},
		{name: "cache-dir", ptr: &m.CacheDir, env: "LPMBISECT_CACHE", usage: "cache for unpacked kernels and initramfs images (default: user cache dir)"},
		{name: "run-dir", ptr: &r.runDir, usage: "where console logs of each boot go (default: <cache-dir>/runs/<time>)"},
		{name: "guest", ptr: &m.Guest, env: "LPMBISECT_GUEST", usage: "guest binary (default: lpmbisect-guest beside this executable)"},
		{name: "qemu", ptr: &m.QEMU, usage: "QEMU binary"},
		{name: "append", ptr: &m.Append, usage: "extra kernel parameters, e.g. \"mitigations=off\""},
		{name: "no-modules", ptr: &m.NoModules, usage: "do not pack kernel modules (results then use virtio only if built in, else the serial fallback)"},
		{name: "verbose", ptr: &r.verbose, alias: "v", usage: "print QEMU command lines and decisions"},
		{name: "fault", ptr: &r.fault, hidden: true, usage: "test-only guest misbehaviour"},
		configOpt(r),
	}
}

// minEffectOpt is --min-effect: a percentage, or auto (each benchmark's
// calibrated floor, at least the configuration's minimum effect) or
// auto:PCT (at least PCT).
func minEffectOpt(r *run) opt {
	r.minEffect = strconv.FormatFloat(r.Stats.MinEffect, 'g', -1, 64)
	return opt{name: "min-effect", ptr: &r.minEffect, usage: "smallest change that counts, in percent (DIFFERENT needs more, SAME excludes it); auto: each benchmark's calibrated floor, at least the default (auto:PCT: at least PCT; see lpmbisect calibrate)"}
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
	return opt{name: "rule", ptr: &r.Stats.Rule, usage: "how deterministic (icount) rows are judged: auto (a calibrated jitter bound decides, from 2 boots a side) or statistical (always the significance test)"}
}

// checkRule rejects a --rule other than auto and statistical.
func (r *run) checkRule() error {
	if r.Stats.Rule != config.RuleAuto && r.Stats.Rule != config.RuleStatistical {
		return usageError("--rule %q: use auto (a jitter bound decides deterministic rows) or statistical (always the significance test)", r.Stats.Rule)
	}
	return nil
}

func configOpt(r *run) opt {
	return opt{name: "config", ptr: &r.Path, usage: "TOML configuration file; flags given on the command line win (see kernels.example.toml)"}
}

// verdictOpts shape verdicts and reports (compare and stat).
func verdictOpts(r *run) []opt {
	return []opt{
		minEffectOpt(r),
		{name: "alpha", ptr: &r.Stats.Alpha, usage: "family-wise error rate of DIFFERENT claims (and of each SAME claim)"},
		ruleOpt(r),
		{name: "fail-on", ptr: &r.failOn, usage: "what fails the exit code: regression (only a change for the worse) or change (any)"},
		{name: "format", ptr: &r.format, usage: "report on stdout: text, markdown, json"},
		{name: "html", ptr: &r.html, usage: "also write an HTML report with SVG plots of every boot to this file"},
		{name: "no-controls", ptr: &r.noControls, usage: "do not run the noop and baseline controls alongside (stat: treat them as ordinary benchmarks)"},
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
