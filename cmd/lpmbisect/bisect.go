package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/lpmbisect/lpmbisect/bisect"
	"github.com/lpmbisect/lpmbisect/compare"
	"github.com/lpmbisect/lpmbisect/config"
	"github.com/lpmbisect/lpmbisect/kernel"
	"github.com/lpmbisect/lpmbisect/report"
	"github.com/lpmbisect/lpmbisect/vmrunner"

	"github.com/lpmbisect/lpmbisect/internal/cachefile"
)

// Exit codes of bisect-run, the git bisect run contract. git marks the
// commit good on 0, bad on 1–127 except 125, skips it on 125, and aborts the
// bisection on 128–255. bisect-run only ever exits with these:
const (
	exitRunGood  = 0   // the commit matches the good endpoint
	exitRunBad   = 1   // the commit matches the bad endpoint
	exitRunSkip  = 125 // it did not build or boot, or stayed UNKNOWN at the boot cap
	exitRunAbort = 255 // stop the bisection: usage error, endpoints not different, host failure
	// 130 and 143 (SIGINT, SIGTERM) abort it too.
)

// bisectFlags are the flags of both bisect commands besides the VM's.
func bisectFlags() []cli.Flag {
	return append(buildFlags(),
		configFlag,
		&cli.StringFlag{Name: "build-command", Usage: "build with this shell command instead (run in the tree; prints the KERNEL it built as its last line; non-zero exit: the commit does not build)"},
		&cli.Float64Flag{Name: "alpha", Value: 0.05, Usage: "error rate of each comparison's SAME and DIFFERENT claims"},
		&cli.Float64Flag{Name: "min-effect", Value: 1, Usage: "smallest change that counts, in percent (above the boot-to-boot noise, below the endpoints' difference)"},
		&cli.IntFlag{Name: "boots", Usage: "boots per look at a kernel (default: the fewest with which one look can decide, given --alpha and --max-boots)"},
		&cli.IntFlag{Name: "max-boots", Value: bisect.DefaultMaxBoots, Usage: "boots per kernel at most while its verdict is UNKNOWN; a candidate still UNKNOWN is skipped"},
		&cli.IntFlag{Name: "parallel", Usage: "boots at once under --accel icount (default: number of CPUs); wall-time boots never overlap"},
		&cli.BoolFlag{Name: "reverse", Usage: "find an improvement: the bad (newer) endpoint is the faster one"},
		&cli.StringFlag{Name: "state", Usage: "state directory: measurements, kept kernels, step logs (default: <git-dir>/lpmbisect, or <cache-dir>/bisect for --images)"},
	)
}

// bisectEnv is what both bisect commands set up from their flags.
type bisectEnv struct {
	s       *session
	bench   *bisect.Bench
	params  string // measurement parameters (bisect.ParamsKey)
	judge   string // statistical levels, for the state's identity
	builder bisect.Builder
	resolve func(string) (*kernel.Kernel, error)
}

func newBisectEnv(c *cli.Context) (*bisectEnv, error) {
	s, err := newSession(c)
	if err != nil {
		return nil, err
	}
	alpha, minEffect := c.Float64("alpha"), c.Float64("min-effect")
	if !(alpha > 0 && alpha < 1) {
		return nil, usageError("--alpha %v must be between 0 and 1", alpha)
	}
	if !(minEffect > 0 && minEffect < 100) {
		return nil, usageError("--min-effect %v must be a percentage between 0 and 100", minEffect)
	}
	if c.Int("boots") < 0 || c.Int("max-boots") < 1 || c.Int("parallel") < 0 {
		return nil, usageError("--boots, --max-boots and --parallel must be positive")
	}
	accel := s.selector.Requested
	parallel := c.Int("parallel")
	if parallel == 0 && accel == vmrunner.Icount {
		parallel = runtime.NumCPU()
	}
	if parallel > 1 && accel != vmrunner.Icount {
		if c.IsSet("parallel") {
			return nil, usageError("--parallel %d needs --accel icount: wall-time boots must not overlap", parallel)
		}
		parallel = 1
	}
	params, err := bisect.ParamsKey(accel, s.plan.KernelArgs(), s.vm.MemoryMB, s.vm.CPUs, s.guest)
	if err != nil {
		return nil, usageError("%v", err)
	}
	resolve := func(in string) (*kernel.Kernel, error) { return kernel.Resolve(in, s.cacheDir) }
	bench := &bisect.Bench{
		Judge: bisect.Judge{Alpha: alpha, MinEffectPct: minEffect},
		Measurer: &bisect.VMMeasurer{
			Guest: s.guest, CacheDir: s.cacheDir, NoModules: s.noModules, GuestArgs: s.plan.KernelArgs(),
			Selector: s.selector, VM: s.vm, RunDir: s.runDir, Parallel: parallel, Log: s.log,
		},
		Resolve: resolve, Boots: c.Int("boots"), MaxBoots: c.Int("max-boots"), Reverse: c.Bool("reverse"), Log: s.log,
	}
	if err := bench.CheckLevels(); err != nil {
		return nil, usageError("%v", err)
	}
	env := &bisectEnv{s: s, bench: bench, params: params, resolve: resolve,
		judge: fmt.Sprintf("alpha=%g min-effect=%g%% boots=%d max-boots=%d", alpha, minEffect, c.Int("boots"), c.Int("max-boots"))}
	if cmd := c.String("build-command"); cmd != "" {
		env.builder = &bisect.CommandBuilder{Command: cmd}
	} else {
		o, err := buildOptions(c)
		if err != nil {
			return nil, err
		}
		env.builder = &bisect.KbuildBuilder{Options: o, Log: s.log}
	}
	return env, nil
}

// openState opens the state and points the measurement store into it.
func (e *bisectEnv) openState(dir string, want bisect.State) (*bisect.State, error) {
	want.Params, want.Judge, want.Reverse = e.params, e.judge, e.bench.Reverse
	st, err := bisect.OpenState(dir, want)
	if err != nil {
		return nil, usageError("%v", err)
	}
	e.bench.Store = &bisect.Store{Dir: filepath.Join(st.Dir(), "measurements", e.params)}
	return st, nil
}

// openRepo finds the work tree containing dir.
func openRepo(ctx context.Context, dir string) (*bisect.Repo, string, error) {
	repo := &bisect.Repo{Dir: dir}
	top, err := repo.TopLevel(ctx)
	if err != nil {
		return nil, "", usageError("%s is not in a git work tree (%v)", dir, err)
	}
	repo.Dir = top
	gitDir, err := repo.GitDir(ctx)
	if err != nil {
		return nil, "", usageError("%v", err)
	}
	return repo, gitDir, nil
}

func bisectRunCommand() *cli.Command {
	return &cli.Command{
		Name:  "bisect-run",
		Usage: "one git bisect run step: build the checked-out tree, measure it, exit 0 (good), 1 (bad) or 125 (skip)",
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return &exitError{code: exitRunAbort, err: fmt.Errorf("%v (see --help; exit %d aborts git bisect run)", err, exitRunAbort)}
		},
		Description: `For git bisect run. Builds the checked-out tree (lpmbisect build, or
--build-command), boots it, and classifies it against the good and bad
endpoints, which are measured the first time and then found again by image
hash in the state directory (<git-dir>/lpmbisect), so each endpoint is
measured once for the whole bisection. A candidate is good when it is SAME
as the good endpoint and DIFFERENT from the bad one on every benchmark that
tells the endpoints apart, and bad the other way round; otherwise boots are
added up to --max-boots, after which it is skipped.

--good and --bad take a KERNEL (bzImage, .deb, build directory) or a git
revision, which is built in a separate worktree; without them, the commits
git bisect was started with (the first marked bad and good in its log).
Without --reverse the bad endpoint must be the slower (a regression); with
--reverse the faster (an improvement), and "bad" means "has the change".

Exit codes (git bisect run's contract):
   0    the commit matches the good endpoint
   1    it matches the bad endpoint
   125  skip: it does not build or boot, or stays UNKNOWN at --max-boots
   255  abort the bisection: usage error, endpoints not different or
        different the other way, an endpoint that does not build or boot,
        QEMU missing, any other failure of the host
   130, 143  interrupted (SIGINT, SIGTERM): aborts the bisection too; run
        it again and finished steps are not measured again
It never exits 2-124 or 126-127, which git would read as "bad".

Examples:
   git bisect start v6.10 v6.9
   git bisect run lpmbisect bisect-run --accel icount --reverse
   git bisect run lpmbisect bisect-run --good /boot/vmlinuz-old --bad /boot/vmlinuz-new
   git bisect run lpmbisect bisect-run --build-command ./build-kernel.sh`,
		Flags: append(append(vmFlags(), bisectFlags()...),
			&cli.StringFlag{Name: "good", Usage: "good endpoint: KERNEL or revision (default: git bisect's good commit)"},
			&cli.StringFlag{Name: "bad", Usage: "bad endpoint: KERNEL or revision (default: git bisect's bad commit)"},
			&cli.StringFlag{Name: "src", Value: ".", Usage: "the checked-out tree"},
		),
		Action: func(c *cli.Context) (err error) {
			defer func() {
				if r := recover(); r != nil {
					err = &exitError{code: exitRunAbort, err: fmt.Errorf("internal error: %v\n%s", r, debug.Stack())}
				}
			}()
			v, err := bisectRunStep(c)
			return bisectRunExit(c, v, err)
		},
	}
}

// bisectRunExit maps a step's outcome to git bisect run's exit codes.
func bisectRunExit(c *cli.Context, v bisect.Verdict, err error) error {
	var se *signalError
	switch {
	case errors.As(err, &se):
		return err
	case err != nil:
		return &exitError{code: exitRunAbort, err: fmt.Errorf("%v (exit %d aborts git bisect run)", err, exitRunAbort)}
	}
	switch v.Class {
	case bisect.Good:
		fmt.Fprintf(c.App.ErrWriter, "lpmbisect: good (exit %d): %s\n", exitRunGood, v.Reason)
		return nil
	case bisect.Bad:
		return &exitError{code: exitRunBad, err: fmt.Errorf("bad (exit %d): %s", exitRunBad, v.Reason)}
	}
	return &exitError{code: exitRunSkip, err: fmt.Errorf("skip (exit %d): %s", exitRunSkip, v.Reason)}
}

func bisectRunStep(c *cli.Context) (bisect.Verdict, error) {
	if _, err := applyConfig(c); err != nil {
		return bisect.Verdict{}, err
	}
	if c.NArg() > 0 {
		return bisect.Verdict{}, usageError("bisect-run takes no arguments, got %q", c.Args().Slice())
	}
	env, err := newBisectEnv(c)
	if err != nil {
		return bisect.Verdict{}, err
	}
	ctx := c.Context
	repo, gitDir, err := openRepo(ctx, c.String("src"))
	if err != nil {
		return bisect.Verdict{}, err
	}
	startBad, startGood, err := repo.BisectEndpoints(ctx)
	if err != nil {
		return bisect.Verdict{}, err
	}
	good, err := endpointArg(ctx, repo, "good", c.String("good"), startGood)
	if err != nil {
		return bisect.Verdict{}, err
	}
	bad, err := endpointArg(ctx, repo, "bad", c.String("bad"), startBad)
	if err != nil {
		return bisect.Verdict{}, err
	}
	stateDir := c.String("state")
	if stateDir == "" {
		stateDir = filepath.Join(gitDir, "lpmbisect")
	}
	st, err := env.openState(stateDir, bisect.State{Kind: "bisect-run", Repo: repo.Dir, Good: good.Kernel + good.Commit, Bad: bad.Kernel + bad.Commit})
	if err != nil {
		return bisect.Verdict{}, err
	}
	step := &bisect.RunStep{
		Bisection: bisect.Bisection{Bench: env.bench, State: st, Log: env.s.log},
		Repo:      repo, Src: repo.Dir, Good: good, Bad: bad,
		Builder: env.builder, BuildDir: buildDirFor(c, repo.Dir), Resolve: env.resolve,
	}
	return step.Run(ctx)
}

// endpointArg reads --good or --bad: a kernel on disk, a revision, or, when
// empty, the commit git bisect was started with (fromLog).
func endpointArg(ctx context.Context, repo *bisect.Repo, name, value, fromLog string) (bisect.Endpoint, error) {
	if value == "" {
		if fromLog == "" {
			return bisect.Endpoint{}, usageError("no %s endpoint: give --%s, or start git bisect with a %s commit", name, name, name)
		}
		return bisect.Endpoint{Commit: fromLog}, nil
	}
	if _, err := os.Stat(value); err == nil {
		abs, err := filepath.Abs(value)
		if err != nil {
			return bisect.Endpoint{}, err
		}
		return bisect.Endpoint{Kernel: abs}, nil
	}
	commit, err := repo.Commit(ctx, value)
	if err != nil {
		return bisect.Endpoint{}, usageError("--%s %s: neither a kernel file nor a commit: %v", name, value, err)
	}
	return bisect.Endpoint{Commit: commit}, nil
}

func bisectCommand() *cli.Command {
	return &cli.Command{
		Name:         "bisect",
		Usage:        "find the commit (or prebuilt kernel) that changed a benchmark, with statistics",
		OnUsageError: onUsageError,
		Description: `With --repo, drives git bisect over a kernel tree: builds and measures the
--good and --bad commits first and refuses to start unless they differ (in
the direction asked: a regression, or an improvement with --reverse), then
builds, boots and classifies each commit git bisect checks out, skipping
commits that do not build or boot or stay UNKNOWN at --max-boots. It
re-checks the culprit against its parent with --recheck-boots more boots
each (interleaved), flags a culprit whose kernel image is identical to its
parent's as suspect, resets the tree, and prints a report naming the
commit, the effect and the confidence.

With --images, searches an ordered list of prebuilt kernels instead: .deb
packages, bzImage files or build directories, given one by one, as a
directory (ordered by version) or as a file listing one per line. The first
is the good endpoint and the last the bad one.

Every step is logged (commit, image hash, boots, verdict, p) and kept in the
state directory. Interrupted, bisect resumes when run again with the same
flags: decided steps and measured kernels are not measured again.

Exit codes: 0 culprit found (and confirmed by the re-check), 2 usage error
(or endpoints that differ the other way), 3 inconclusive (endpoints not
different, several candidates left by skipped commits, or a suspect
culprit), 4 infrastructure failure, 130/143 interrupted.

Examples:
   lpmbisect bisect --repo ~/linux --good v6.9 --bad v6.10 --reverse --accel icount
   lpmbisect bisect --images /srv/kernels/ --reverse --html report.html
   lpmbisect bisect --config kernels.toml`,
		Flags: append(append(vmFlags(), bisectFlags()...),
			&cli.StringFlag{Name: "repo", Usage: "kernel git repository to bisect"},
			&cli.StringFlag{Name: "good", Usage: "good (older) revision"},
			&cli.StringFlag{Name: "bad", Usage: "bad (newer) revision"},
			&cli.StringSliceFlag{Name: "images", Usage: "ordered kernels to search instead of a repository: files, a directory, or a list file (repeatable)"},
			&cli.IntFlag{Name: "recheck-boots", Value: 4, Usage: "boots added to the culprit and its parent to re-check them (0: no re-check)"},
			&cli.StringFlag{Name: "html", Usage: "also write the report as HTML to this file"},
		),
		Action: func(c *cli.Context) error {
			cfg, err := applyConfig(c)
			if err != nil {
				return err
			}
			if c.NArg() > 0 {
				return usageError("bisect takes no arguments (kernels go to --images), got %q", c.Args().Slice())
			}
			images := c.StringSlice("images")
			if len(images) == 0 && c.String("repo") == "" && cfg != nil {
				images = configImages(cfg)
			}
			switch {
			case len(images) > 0 && c.String("repo") != "":
				return usageError("give --repo or --images, not both")
			case len(images) == 0 && c.String("repo") == "":
				return usageError("bisect needs --repo DIR --good REV --bad REV, or --images LIST")
			case c.Int("recheck-boots") < 0:
				return usageError("--recheck-boots must not be negative")
			}
			if h := c.String("html"); h != "" {
				if err := checkWritable(h); err != nil {
					return err
				}
			}
			env, err := newBisectEnv(c)
			if err != nil {
				return err
			}
			var res *bisect.Result
			var st *bisect.State
			if len(images) > 0 {
				res, st, err = bisectImages(c, env, images)
			} else {
				res, st, err = bisectRepo(c, env)
			}
			if err != nil {
				return bisectError(err)
			}
			return bisectReport(c, env, st, res)
		},
	}
}

// configImages returns the prebuilt kernels of the configuration, in order.
func configImages(cfg *config.File) []string {
	var out []string
	for _, k := range cfg.Kernels {
		if k.Path != "" {
			out = append(out, k.Path)
		}
	}
	return out
}

func bisectImages(c *cli.Context, env *bisectEnv, args []string) (*bisect.Result, *bisect.State, error) {
	list, err := bisect.ExpandImages(args)
	if err != nil {
		return nil, nil, usageError("%v", err)
	}
	for i, p := range list {
		if list[i], err = filepath.Abs(p); err != nil {
			return nil, nil, err
		}
	}
	if len(list) < 2 {
		return nil, nil, usageError("--images gives %d kernel; a bisection needs at least two (the first good, the last bad)", len(list))
	}
	stateDir := c.String("state")
	if stateDir == "" {
		stateDir = filepath.Join(env.s.cacheDir, "bisect")
	}
	st, err := env.openState(stateDir, bisect.State{Kind: "images", Images: list, Good: list[0], Bad: list[len(list)-1]})
	if err != nil {
		return nil, nil, err
	}
	ib := &bisect.ImagesBisect{
		Bisection: bisect.Bisection{Bench: env.bench, State: st, RecheckBoots: c.Int("recheck-boots"), Log: env.s.log},
		Images:    list,
	}
	res, err := ib.Run(c.Context)
	return res, st, err
}

func bisectRepo(c *cli.Context, env *bisectEnv) (*bisect.Result, *bisect.State, error) {
	if c.String("good") == "" || c.String("bad") == "" {
		return nil, nil, usageError("--repo needs --good REV and --bad REV")
	}
	ctx := c.Context
	repo, gitDir, err := openRepo(ctx, c.String("repo"))
	if err != nil {
		return nil, nil, err
	}
	good, err := repo.Commit(ctx, c.String("good"))
	if err != nil {
		return nil, nil, usageError("--good: %v", err)
	}
	bad, err := repo.Commit(ctx, c.String("bad"))
	if err != nil {
		return nil, nil, usageError("--bad: %v", err)
	}
	stateDir := c.String("state")
	if stateDir == "" {
		stateDir = filepath.Join(gitDir, "lpmbisect")
	}
	st, err := env.openState(stateDir, bisect.State{Kind: "git", Repo: repo.Dir, Good: good, Bad: bad})
	if err != nil {
		return nil, nil, err
	}
	gb := &bisect.GitBisect{
		Bisection: bisect.Bisection{Bench: env.bench, State: st, RecheckBoots: c.Int("recheck-boots"), Log: env.s.log},
		Repo:      repo, Good: good, Bad: bad, Builder: env.builder, BuildDir: buildDirFor(c, repo.Dir), Resolve: env.resolve,
	}
	res, err := gb.Run(ctx)
	if err != nil && ctx.Err() != nil {
		fmt.Fprintf(env.s.log, "lpmbisect: interrupted: run the same command again to resume from %s (or git bisect reset to abandon)\n", st.Path())
	}
	return res, st, err
}

// bisectError maps a failed bisection to an exit code.
func bisectError(err error) error {
	var ee *exitError
	var se *signalError
	switch {
	case errors.As(err, &ee), errors.As(err, &se):
		return err
	case errors.Is(err, bisect.ErrEndpointsNotDifferent):
		return &exitError{code: exitInconclusive, err: err}
	case errors.Is(err, bisect.ErrWrongDirection), errors.Is(err, bisect.ErrOtherBisection), errors.Is(err, bisect.ErrGit), errors.Is(err, bisect.ErrEndpointBroken):
		return &exitError{code: exitUsage, err: err}
	}
	return err
}

// bisectReport prints the report, writes it into the state directory (and
// --html), with compare's HTML report of the re-check beside it, and
// returns the exit code's error.
func bisectReport(c *cli.Context, env *bisectEnv, st *bisect.State, res *bisect.Result) error {
	rep := bisect.Report{State: st, Result: res}
	base := strings.TrimSuffix(st.Path(), ".json")
	var pages []string // where HTML goes
	pages = append(pages, base+".report.html")
	if h := c.String("html"); h != "" {
		pages = append(pages, h)
	}
	recheck, err := recheckReport(c, env, st, res)
	if err != nil {
		fmt.Fprintf(c.App.ErrWriter, "lpmbisect: warning: no comparison report of the re-check: %v\n", err)
	}
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		return err
	}
	c.App.Writer.Write(text.Bytes())
	if err := os.WriteFile(base+".report.txt", text.Bytes(), 0o644); err != nil {
		return err
	}
	for _, page := range pages {
		rep.RecheckHTML = ""
		if recheck != nil {
			name := strings.TrimSuffix(filepath.Base(page), ".html") + ".recheck.html"
			if err := cachefile.WriteAtomic(filepath.Join(filepath.Dir(page), name), func(w io.Writer) error { return report.WriteHTML(w, recheck.rep, recheck.meta) }); err != nil {
				return usageError("--html: %v", err)
			}
			rep.RecheckHTML = name
		}
		if err := cachefile.WriteAtomic(page, rep.WriteHTML); err != nil {
			return usageError("--html: %v", err)
		}
	}
	if h := c.String("html"); h != "" {
		fmt.Fprintf(c.App.ErrWriter, "lpmbisect: HTML report in %s\n", h)
	}
	if res.FirstBad != "" && (res.Recheck == nil || (!res.Recheck.SameImage && res.Recheck.Confirmed)) {
		return nil
	}
	return &exitError{code: exitInconclusive, err: fmt.Errorf("inconclusive: %s", rep.Verdict())}
}

type comparison struct {
	rep  *compare.Report
	meta report.Meta
}

// recheckReport compares the parent and the culprit from their stored
// results, as compare would: nil when there was no re-check.
func recheckReport(c *cli.Context, env *bisectEnv, st *bisect.State, res *bisect.Result) (*comparison, error) {
	if res.FirstBad == "" || res.Recheck == nil || res.Recheck.SameImage {
		return nil, nil
	}
	parent := bisect.Kernel{Input: res.Parent, Label: "parent " + filepath.Base(res.Parent)}
	culprit := bisect.Kernel{Input: res.FirstBad, Label: "culprit " + filepath.Base(res.FirstBad)}
	if st.Kind == "git" {
		pb, cb := st.Kernels[res.Parent], st.Kernels[res.FirstBad]
		if pb == nil || cb == nil {
			return nil, fmt.Errorf("the state has no kernels for %s and its parent", res.FirstBad)
		}
		parent = bisect.Kernel{Input: pb.Kernel, Label: "parent " + res.Parent[:12]}
		culprit = bisect.Kernel{Input: cb.Kernel, Label: "culprit " + res.FirstBad[:12]}
	}
	rep, pk, ck, err := env.bench.CompareStored(parent, culprit)
	if err != nil {
		return nil, err
	}
	meta := report.Meta{
		A:       report.Kernel{Input: parent.Input, Release: parent.Label, SHA256: pk.SHA256},
		B:       report.Kernel{Input: culprit.Input, Release: culprit.Label, SHA256: ck.SHA256},
		Accel:   string(env.s.selector.Requested),
		Samples: env.s.plan.Samples,
		Command: strings.Join(os.Args, " "),
		Date:    time.Now(),
	}
	return &comparison{rep: rep, meta: meta}, nil
}

func checkWritable(path string) error {
	dir := filepath.Dir(path)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return usageError("--html %s: directory %s does not exist", path, dir)
	}
	return nil
}
