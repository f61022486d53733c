package main

// End-to-end test of --cpu-profile on a fleet: the profile travels in the
// boot jobs to the workers, which boot it, into the results and the
// nights of the history; a change of profile between nights is said in the
// night's note and taken for no change point.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lpmbisect/lpmbisect/flow/fleet"
	"github.com/lpmbisect/lpmbisect/host/vmrunner"
	"github.com/lpmbisect/lpmbisect/present/report"
	"github.com/lpmbisect/lpmbisect/stats/compare"
	"github.com/lpmbisect/lpmbisect/testbed/testkernels"
	"github.com/lpmbisect/lpmbisect/wire"
)

func TestFleetCPUProfile(t *testing.T) {
	bootsInParallel(t)
	vmArgs(t) // skips (or fails under CI) without QEMU
	zen2, err := vmrunner.LookupCPUProfile("zen2")
	if err != nil {
		t.Fatal(err)
	}
	zen2Model, defaultModel := zen2.QEMUModel(wire.AccelIcount), vmrunner.CPUModel(wire.AccelIcount)
	db, _ := migratedFleet(t)
	startWorker(t, db, "w1")
	conn, err := pgx.Connect(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	// profiles lists, per CPU model the workers booted, the boot jobs'
	// CPU profile (the job's own arguments) after job id from.
	profiles := func(from int64) map[string]string {
		rows, err := conn.Query(context.Background(), `
SELECT DISTINCT r.cpu_model, COALESCE(j.args->'boot'->>'cpu_profile', '')
FROM river_job j JOIN lpmbisect_fleet_boot_results r ON r.job_id = j.id WHERE j.id > $1 AND j.kind = $2`, from, fleet.KindBoot)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string]string{}
		for rows.Next() {
			var cpu, profile string
			if err := rows.Scan(&cpu, &profile); err != nil {
				t.Fatal(err)
			}
			out[cpu] = profile
		}
		return out
	}
	lastJob := func() int64 {
		var id int64
		conn.QueryRow(context.Background(), "SELECT COALESCE(max(id), 0) FROM river_job").Scan(&id)
		return id
	}

	// A compare on the fleet with a profile: the jobs carry it, the worker
	// boots its model, and the report says what each kernel made of it.
	code, stdout, stderr := runCLI(t, compareArgs(t, "--no-insight", "--cpu-profile", "zen2", "--db", db, "--queue", "icount")...)
	row := lookupRow(t, "compare on the fleet with zen2", code, stdout, stderr, 0)
	if code != exitOK || row.Verdict != compare.Different || *row.DeltaPct > -16.6 {
		t.Errorf("compare on the fleet with zen2: exit %d, %s %+.2f%%; want exit 0 and DIFFERENT, more than the default model's −16.3 %% (6.1's return thunk)",
			code, row.Verdict, *row.DeltaPct)
	}
	var doc report.Document
	json.Unmarshal([]byte(stdout), &doc)
	for i, c := range doc.Meta.CPU {
		if c == nil || c.Profile != "zen2" || c.Model != zen2Model || c.ReturnThunk != "spec_rstack_overflow: Safe RET" {
			t.Errorf("compare on the fleet with zen2: side %c's CPU %+v; want zen2's model and SRSO's Safe RET", 'A'+i, c)
		}
	}
	if got := profiles(0); len(got) != 1 || got[zen2Model] != "zen2" {
		t.Errorf("the compare's boot jobs and what the worker booted: %v; want every job naming zen2 and booted on %s", got, zen2Model)
	}

	// Nights on the fleet: three on zen2, then one on the default model.
	// The fourth says so and finds no change point where the counts step.
	dir := t.TempDir()
	images := filepath.Join(dir, "images")
	os.Mkdir(images, 0o755)
	cfg := nightlyConfig(t, dir, fmt.Sprintf(`[[series]]
name = "profiled"
images = %q
reference = %q
bench = "LPMTrie/op=lookup/keys=random"
`, images, testkernels.Deb(t, testkernels.Debian61)))
	if err := os.WriteFile(cfg, []byte(strings.Replace(readFile(t, cfg), "[measure]\n", "[measure]\naccel = \"icount\"\ncpu_profile = \"zen2\"\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	dates := []string{"2026-11-01", "2026-11-02", "2026-11-03", "2026-11-04"}
	for night, date := range dates {
		deb := testkernels.Deb(t, testkernels.Fortnight[night])
		if err := os.Symlink(deb, filepath.Join(images, filepath.Base(deb))); err != nil {
			t.Fatal(err)
		}
		from := lastJob()
		args := []string{"nightly", "--config", cfg, "--date", date, "--no-insight", "--db", db, "--queue", "icount"}
		want := "zen2"
		if night == len(dates)-1 { // the history's configuration changes its profile
			want = ""
			if err := os.WriteFile(cfg, []byte(strings.Replace(readFile(t, cfg), `cpu_profile = "zen2"`, `cpu_profile = "default"`, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		start := time.Now()
		code, stdout, stderr := runCLI(t, args...)
		t.Logf("night %s (%s): exit %d\n%s", date, time.Since(start).Round(time.Second), code, stdout)
		if code != exitOK {
			t.Fatalf("night %s: exit %d; want 0\n%s", date, code, stderr)
		}
		model := map[string]string{"zen2": zen2Model, "": defaultModel}[want]
		if got := profiles(from); len(got) != 1 || got[model] != want {
			t.Errorf("night %s: boot jobs and what the worker booted: %v; want every job naming %q, booted on %s", date, got, want, model)
		}
	}

	code, stdout, stderr = runCLI(t, "history", "--config", cfg, "--format", "json")
	if code != exitOK {
		t.Fatalf("lpmbisect history: exit %d\n%s", code, stderr)
	}
	var hist report.HistoryDocument
	if err := json.Unmarshal([]byte(stdout), &hist); err != nil || len(hist.Series) != 1 || len(hist.Series[0].Nights) != len(dates) {
		t.Fatalf("history JSON: %v; want one series of %d nights\n%s", err, len(dates), stdout)
	}
	s := hist.Series[0]
	for i, n := range s.Nights {
		want := zen2Model
		if i == len(dates)-1 {
			want = defaultModel
		}
		if n.Status != "measured" || n.CPUModel != want {
			t.Errorf("night %s: %s on CPU model %q; want measured on %q", n.Date, n.Status, n.CPUModel, want)
		}
	}
	last := s.Nights[len(dates)-1]
	if want := "CPU changed since " + dates[2] + ": zen2 (-cpu " + zen2Model + ") → default (-cpu " + defaultModel + ")"; !strings.Contains(last.Note, want) {
		t.Errorf("night %s: note %q; want it to say %q", last.Date, last.Note, want)
	}
	for _, r := range last.Rows {
		if r.VsPrevious != nil {
			t.Errorf("night %s, %s: compared with the night before on another CPU model: %+v", last.Date, r.Benchmark, r.VsPrevious)
		}
	}
	if len(s.ChangePoints) != 0 {
		t.Errorf("change points %+v; want none: the step is the CPU's", s.ChangePoints)
	}
	assertNoQEMULeft(t)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
