package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/lpmbisect/lpmbisect/flow/bisect"
	"github.com/lpmbisect/lpmbisect/flow/fleet"
	"github.com/lpmbisect/lpmbisect/history"
	"github.com/lpmbisect/lpmbisect/host/measure"
)

// remote is where --db and --queue send a command's boots: a fleet's
// queue instead of this host. One connection serves every setup of a
// command (nightly makes one per series); runMain closes it.
type remote struct {
	ctx        context.Context // the command's: Ctrl-C cancels the outstanding jobs
	db, queue  string
	stuckAfter time.Duration
	// --build-queue, --tree, --build-config: a bisection's builds as
	// build jobs (fleetBuildOpts).
	buildQueue, tree, buildConfig string

	shared fleet.Shared
}

// dbOpt is --db: the fleet database.
func dbOpt(r *invocation) opt {
	return opt{Name: "db", Ptr: &r.remote.db, Usage: "fleet database, postgres://USER@HOST/DB (default: the configuration's [nightly] db when it is one; the password may come from PGPASSWORD or ~/.pgpass)"}
}

// fleetOpts are --db, --queue and --stuck-after of the commands that boot
// (compare, bisect, bisect-run, nightly).
func fleetOpts(r *invocation) []opt {
	if r.remote.stuckAfter == 0 {
		r.remote.stuckAfter = fleet.DefaultBootStuckAfter
	}
	return []opt{
		dbOpt(r),
		{Name: "queue", Ptr: &r.remote.queue, Usage: "run the boots as jobs on this fleet queue (icount, tcg-CLASS, kvm-CLASS; its workers must be running, see lpmbisect worker) instead of here"},
		{Name: "stuck-after", Ptr: &r.remote.stuckAfter, Usage: "with --queue: how long one boot may run on a worker before it is taken for lost (a killed worker, a dead host) and run again on another"},
	}
}

// fleetBuildOpts are --build-queue, --tree and --build-config of the
// commands that build commits (bisect, bisect-run, nightly).
func fleetBuildOpts(r *invocation) []opt {
	if r.remote.buildConfig == "" {
		r.remote.buildConfig = "default"
	}
	return []opt{
		{Name: "build-queue", Ptr: &r.remote.buildQueue, Usage: "with --db: build each commit as a job on this fleet build queue (build, build-CLASS; its workers must be running with the tree, see lpmbisect worker --tree) instead of here"},
		{Name: "tree", Ptr: &r.remote.tree, Usage: "with --build-queue: the NAME of the tree on the build workers (their --tree NAME=DIR); the commit is the checked-out tree's HEAD"},
		{Name: "build-config", Ptr: &r.remote.buildConfig, Usage: "with --build-queue: the build configuration the workers know by this name (a worker's [build] section is \"default\")"},
	}
}

// useFleetBuilds makes s build its commits on the fleet's build queue
// when --build-queue is given (a fleet.Builder); without it s is
// unchanged.
func (r *invocation) useFleetBuilds(s *bisect.Bisector) (*bisect.Bisector, error) {
	if r.remote == nil || r.remote.buildQueue == "" {
		return s, nil
	}
	url, err := r.fleetDB("--build-queue " + r.remote.buildQueue)
	switch {
	case err != nil:
		return nil, err
	case r.remote.tree == "":
		return nil, usageError("--build-queue %s needs --tree NAME: the tree's name on the build workers (their --tree NAME=DIR)", r.remote.buildQueue)
	case r.remote.buildConfig == "":
		return nil, usageError("--build-config must name a build configuration of the workers (theirs is \"default\")")
	case s.BuildCommand != "":
		return nil, usageError("--build-command and --build-queue: build jobs carry no commands (the workers' configuration builds); give one of them")
	}
	q, err := fleet.CheckBuildQueue(r.remote.buildQueue)
	if err != nil {
		return nil, queueError("build-queue", err)
	}
	c, err := r.remote.connect(url, r)
	if err != nil {
		return nil, err
	}
	s.RemoteBuilder = &fleet.Builder{Client: c, Queue: q.Name, Tree: r.remote.tree, Config: r.remote.buildConfig}
	r.log.Printf("builds go to queue %s of fleet %s (tree %s, configuration %s)", q.Name, c.Location(), r.remote.tree, r.remote.buildConfig)
	return s, nil
}

// fleetURL is the fleet database: --db, else the configuration's
// [nightly] db when it is a PostgreSQL URL (a SQLite history is no fleet).
func (r *invocation) fleetURL() string {
	if r.remote.db != "" {
		return r.remote.db
	}
	if history.IsPostgres(r.Nightly.DB) {
		return r.Nightly.DB
	}
	return ""
}

// checkFleet checks --db and --queue before the setup, whose accelerator
// may need a probe boot: a usage error comes before any VM starts.
func (r *invocation) checkFleet() error {
	if r.remote == nil || r.remote.queue == "" && (r.remote.db == "" || r.remote.buildQueue != "") {
		return nil // boots here (builds, perhaps, on the fleet)
	}
	if r.remote.queue == "" {
		return usageError("--db names the fleet, --queue NAME sends the boots there: give both (or neither, to boot here)")
	}
	_, err := r.fleetDB("--queue " + r.remote.queue)
	return err
}

// useFleet makes s boot on the fleet when --queue is given: a
// fleet.Executor as its remote policy, so verdicts, looks, reports and exit
// codes are the local code's. Without --queue it changes nothing. The
// flags were checked by checkFleet.
func (r *invocation) useFleet(s *measure.Setup) error {
	if r.remote == nil || r.remote.queue == "" {
		return nil
	}
	url, err := r.fleetDB("--queue " + r.remote.queue)
	if err != nil {
		return err
	}
	q, err := fleet.CheckBootQueue(r.remote.queue, s.Accel, r.remote.stuckAfter)
	if err != nil {
		return queueError("queue", err)
	}
	c, err := r.remote.connect(url, r)
	if err != nil {
		return err
	}
	// Seed draws the turns of paired rounds: compare's order seed (--seed
	// or the clock, set before its setup), as a local paired run uses it.
	s.Remote = &fleet.Executor{Client: c, Queue: q.Name, Guest: s.Guest, Seed: r.seed, StuckAfter: r.remote.stuckAfter, Log: r.log}
	r.log.Printf("boots go to queue %s of fleet %s", q.Name, c.Location())
	return nil
}

// connect opens the fleet database once per command.
func (l *remote) connect(url string, r *invocation) (*fleet.Client, error) {
	ctx := l.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	c, err := l.shared.Connect(ctx, url, r.log)
	return c, fleetError(err)
}

// close closes the fleet connection, if a command opened one.
func (l *remote) close() {
	if l != nil {
		l.shared.Close()
	}
}

// fleetError gives the fleet errors that an operator fixes by hand (an
// unmigrated database, a taken worker name) the usage exit code, with the
// command that migrates; the rest stay infrastructure failures.
func fleetError(err error) error {
	switch {
	case errors.Is(err, fleet.ErrNeedsMigration):
		return &exitError{code: exitUsage, err: fmt.Errorf("%w (run lpmbisect fleet migrate --db URL, as the fleet's operator)", err)}
	case errors.Is(err, fleet.ErrNewerSchema), errors.Is(err, fleet.ErrNoDatabase), errors.Is(err, fleet.ErrQueueName),
		errors.Is(err, fleet.ErrWorkerNameTaken):
		return usageError("%v", err)
	}
	return err
}

func fleetCommand(r *invocation) *cli.Command {
	opts := []opt{configOpt(r),
		dbOpt(r),
		{Name: "format", Ptr: &r.format, Usage: "on stdout: text or json"},
	}
	cmd := command("fleet", "the fleet's workers, queues, running and failed jobs", "", opts, func(c *cli.Context) error {
		if c.NArg() > 0 {
			return usageError("fleet takes no arguments (its subcommand is migrate), got %q", c.Args().Slice())
		}
		if r.format != "text" && r.format != "json" {
			return usageError("--format %q: use text or json", r.format)
		}
		url, err := r.fleetDB("fleet")
		if err != nil {
			return err
		}
		st, err := fleet.ReadStatus(c.Context, url)
		if err != nil {
			return fleetError(err)
		}
		if r.format == "json" {
			enc := json.NewEncoder(c.App.Writer)
			enc.SetIndent("", "  ")
			return enc.Encode(st)
		}
		return st.WriteText(c.App.Writer)
	})
	// Its own --db: a flag of the subcommand would reset the field the
	// parent's --db set (the line's flags move to the parent, see
	// cliflag.ReorderArgs).
	var migrateDB string
	migrateOpts := []opt{configOpt(r), dbOpt(r)}
	migrateOpts[1].Ptr = &migrateDB
	migrate := command("migrate", "create or upgrade River's tables and the fleet's (never done behind your back)", "", migrateOpts, func(c *cli.Context) error {
		if c.NArg() > 0 {
			return usageError("fleet migrate takes no arguments, got %q", c.Args().Slice())
		}
		if migrateDB != "" {
			r.remote.db = migrateDB
		}
		url, err := r.fleetDB("fleet migrate")
		if err != nil {
			return err
		}
		m, err := fleet.Migrate(c.Context, url)
		if err != nil {
			return fleetError(err)
		}
		fmt.Fprintf(c.App.Writer, "fleet %s: River schema version %d → %d, lpmbisect fleet schema version %d → %d\n",
			history.Redact(url), m.RiverFrom, m.RiverTo, m.FleetFrom, m.FleetTo)
		return nil
	})
	migrate.Description = help("fleet-migrate") // help/migrate.txt is history migrate's
	cmd.Subcommands = []*cli.Command{migrate}
	return cmd
}

// fleetDB is the fleet database that what ("fleet", "--queue icount")
// needs: --db, or the configuration's [nightly] db.
func (r *invocation) fleetDB(what string) (string, error) {
	url := r.fleetURL()
	switch {
	case url == "":
		return "", usageError("%s needs the fleet database: give --db postgres://USER@HOST/DB (or a postgres:// [nightly] db in --config)", what)
	case !history.IsPostgres(url):
		return "", usageError("--db %s: not a postgres:// URL (the fleet needs PostgreSQL)", history.Redact(url))
	}
	return url, nil
}

// queueError names the flags of a queue the fleet refuses: flag's own, or
// --accel and --stuck-after.
func queueError(flag string, err error) error {
	var ae *fleet.AccelError
	switch {
	case errors.As(err, &ae):
		return usageError("--accel %s: %v (give --accel %s)", ae.Accel, err, ae.Queue.Accel)
	case errors.Is(err, fleet.ErrStuckAfter):
		return usageError("--stuck-after %v", err)
	case errors.Is(err, fleet.ErrQueueName):
		return usageError("--%s: %v", flag, err)
	}
	return usageError("--%s %v", flag, err)
}
