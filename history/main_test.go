package history

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lpmbisect/lpmbisect/stats/compare"
	"github.com/lpmbisect/lpmbisect/testbed/testpg"
)

// helperEnv makes the test binary a helper process (see runHelper) instead
// of running tests: the lock and kill tests need a second process to kill.
const helperEnv = "LPMBISECT_HISTORY_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(runHelper(mode, os.Getenv("LPMBISECT_HISTORY_DB")))
	}
	os.Exit(testpg.Main(m))
}

// backend is one row of the table every test runs on.
type backend struct {
	name string
	// location returns a fresh, empty database.
	location func(tb testing.TB) string
}

var backends = []backend{
	{"sqlite", func(tb testing.TB) string { return filepath.Join(tb.TempDir(), "history.db") }},
	{"postgres", func(tb testing.TB) string { return testpg.Shared(tb) }},
}

// forEachBackend runs f on a fresh database of each backend.
func forEachBackend(t *testing.T, f func(t *testing.T, location string)) {
	t.Helper()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { f(t, b.location(t)) })
	}
}

// openFresh migrates (PostgreSQL needs it) and opens location.
func openFresh(t *testing.T, location string) *DB {
	t.Helper()
	ctx := context.Background()
	if IsPostgres(location) {
		if _, _, err := Migrate(ctx, location); err != nil {
			t.Fatalf("Migrate(%s) = %v", Redact(location), err)
		}
	}
	db, err := Open(ctx, location)
	if err != nil {
		t.Fatalf("Open(%s) = %v", Redact(location), err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// fixture is what a test night stores: a series, a night, boots and rows.
type fixture struct {
	series Series
	night  Night
	boots  []Boot
	rows   []NightRow
}

var testStart = time.Date(2026, 3, 1, 2, 0, 0, 123456000, time.UTC)

func nightFixture(seriesName string, i int) fixture {
	date := time.Date(2026, 3, 1+i, 0, 0, 0, 0, time.UTC).Format(time.DateOnly)
	f := fixture{
		series: Series{Name: seriesName, Kind: GitSeries, Source: "/src/bpf-next", Branch: "master",
			Reference: "/boot/vmlinuz-6.12.117", Bench: "lookup", Accel: "icount"},
		night: Night{Date: date, Status: StatusMeasured,
			Tip: Kernel{Commit: fmt.Sprintf("%040x", 0xc0ffee+i), Subject: fmt.Sprintf("bpf: change %d", i),
				ImageSHA256: fmt.Sprintf("%064x", 0xbeef+i), Release: "6.13.0-rc1", Compiler: "gcc 12.2.0", ConfigHash: "cfg1"},
			Reference: Kernel{ImageSHA256: fmt.Sprintf("%064x", 0xfeed), Release: "6.12.117+deb12-cloud-amd64"},
			Accel:     "tcg-icount", QEMUVersion: "7.2.19", CPUModel: "Haswell-v4", Host: "ci-1", ToolVersion: "v0.9.0",
			Started: testStart.AddDate(0, 0, i), Finished: testStart.AddDate(0, 0, i).Add(17 * time.Minute)},
	}
	for _, role := range []Role{RoleTip, RoleReference} {
		for boot := 0; boot < 3; boot++ {
			median := 980.0 + float64(boot)
			if role == RoleReference {
				median = 838
			}
			f.boots = append(f.boots, Boot{Role: role, Index: boot, Outcome: "ok",
				Results: fmt.Sprintf("kernel: %s\nboot: %d\nBenchmarkLPMTrie/op=lookup 2000 %g insn/op\nBenchmarkLPMTrie/op=noop 2000 15.01 insn/op\n", role, boot, median),
				Summaries: []BootSummary{
					{Benchmark: "LPMTrie/op=lookup", Unit: "insn/op", Median: median, Samples: 5, Min: median - 1, Max: median + 1},
					{Benchmark: "LPMTrie/op=noop", Unit: "insn/op", Median: 15.01, Samples: 5, Min: 15.01, Max: 15.01},
				}})
		}
	}
	f.rows = []NightRow{
		{Metric: Metric{"LPMTrie/op=lookup", "insn/op"},
			Tip: Estimate{Center: 981 + float64(i), Lo: 980, Hi: 982 + float64(i), Boots: 3}, Reference: Estimate{Center: 838, Lo: 838, Hi: 838, Boots: 3},
			Ratio: (981 + float64(i)) / 838, VsReference: &Comparison{Verdict: compare.Different, DeltaPct: 17.1, P: 0.002}},
		{Metric: Metric{"LPMTrie/op=noop", "insn/op"},
			Tip: Estimate{Center: 15.01, Lo: 15.01, Hi: 15.01, Boots: 3}, Reference: Estimate{Center: 15.01, Lo: 15.01, Hi: 15.01, Boots: 3},
			Ratio: 1, VsPrevious: &Comparison{Verdict: compare.Same, DeltaPct: 0, P: 1}, VsReference: &Comparison{Verdict: compare.Same, DeltaPct: 0, P: 1}},
	}
	return f
}

// store writes the fixture in one transaction, as the nightly driver would,
// and returns the series and night IDs and how many boots were new.
func (f fixture) store(ctx context.Context, db *DB) (seriesID, nightID int64, inserted int, err error) {
	err = db.Write(ctx, func(tx *Tx) error {
		s, err := tx.PutSeries(ctx, f.series)
		if err != nil {
			return err
		}
		seriesID = s.ID
		n := f.night
		n.SeriesID = s.ID
		if nightID, err = tx.PutNight(ctx, n); err != nil {
			return err
		}
		for _, b := range f.boots {
			b.NightID = nightID
			ok, err := tx.PutBoot(ctx, b)
			if err != nil {
				return err
			}
			if ok {
				inserted++
			}
		}
		if err := tx.SetNightRows(ctx, nightID, f.rows); err != nil {
			return err
		}
		return tx.SetTip(ctx, s.ID, n.Tip.Commit, n.Tip.ImageSHA256)
	})
	return seriesID, nightID, inserted, err
}

// count returns the number of rows of a table.
func count(t *testing.T, db *DB, table string) int {
	t.Helper()
	var n int
	if err := db.sql.QueryRow("SELECT COUNT(*) FROM " + table).Scan(&n); err != nil {
		t.Fatalf("count %s: %v", table, err)
	}
	return n
}

// helper is a child process running runHelper in the given mode.
type helper struct {
	cmd   *exec.Cmd
	lines *bufio.Scanner
	stdin io.WriteCloser
}

// startHelper starts the test binary as a helper and waits until it prints
// ready (unless ready is "").
func startHelper(t *testing.T, mode, location, ready string) *helper {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, "LPMBISECT_HISTORY_DB="+location)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start helper %s: %v", mode, err)
	}
	h := &helper{cmd: cmd, lines: bufio.NewScanner(out), stdin: in}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if ready != "" {
		got := make(chan string, 1)
		go func() {
			if h.lines.Scan() {
				got <- h.lines.Text()
			}
			close(got)
		}()
		select {
		case line := <-got:
			if line != ready {
				t.Fatalf("helper %s said %q; want %q", mode, line, ready)
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("helper %s did not say %q within 60s", mode, ready)
		}
	}
	return h
}

// kill ends the helper with SIGKILL, the way the OOM killer or a power cut
// would, and waits until it is gone.
func (h *helper) kill() {
	h.cmd.Process.Signal(syscall.SIGKILL)
	h.cmd.Wait()
}

// runHelper is the body of a helper process.
func runHelper(mode, location string) int {
	ctx := context.Background()
	db, err := Open(ctx, location)
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 2
	}
	switch {
	case mode == "hold-lock":
		if _, err := db.Lock(ctx, "nightly", 0); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			return 2
		}
		fmt.Println("locked")
		select {}
	case mode == "hang-in-write":
		// Everything of a night but the commit, then wait to be killed.
		f := nightFixture("killed", 0)
		err := db.Write(ctx, func(tx *Tx) error {
			s, err := tx.PutSeries(ctx, f.series)
			if err != nil {
				return err
			}
			n := f.night
			n.SeriesID = s.ID
			id, err := tx.PutNight(ctx, n)
			if err != nil {
				return err
			}
			for _, b := range f.boots[:4] {
				b.NightID = id
				if _, err := tx.PutBoot(ctx, b); err != nil {
					return err
				}
			}
			fmt.Println("writing")
			select {}
		})
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 2
	case strings.HasPrefix(mode, "write-nights:"):
		n, _ := strconv.Atoi(strings.TrimPrefix(mode, "write-nights:"))
		// Start when told, so that the writers really overlap.
		fmt.Println("ready")
		bufio.NewReader(os.Stdin).ReadString('\n')
		for i := 0; i < n; i++ {
			f := nightFixture("concurrent", i)
			seriesID, _, _, err := f.store(ctx, db)
			if err == nil {
				err = db.Write(ctx, func(tx *Tx) error {
					_, err := tx.PutChangePoint(ctx, ChangePoint{SeriesID: seriesID, Metric: f.rows[0].Metric,
						Line: LineKernel, Night: "2026-03-04", NightIndex: 3, DeltaPct: float64(i), P: 0.0001})
					return err
				})
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, "helper:", err)
				return 1
			}
		}
		return 0
	}
	fmt.Fprintln(os.Stderr, "helper: unknown mode", mode)
	return 2
}
