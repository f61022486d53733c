// Command cpsim prints the calibration tables of package changepoint: false
// change points per series-year on simulated series without a change, and
// precision, recall and detection delay on series with steps.
//
//	go run ./stats/changepoint/internal/cpsim -table null
//	go run ./stats/changepoint/internal/cpsim -table steps
//	go run ./stats/changepoint/internal/cpsim -table sweep -series 200
//	go run ./stats/changepoint/internal/cpsim -table outliers
//	go run ./stats/changepoint/internal/cpsim -table outliers -excursion-sigmas +Inf
//	go run ./stats/changepoint/internal/cpsim -table outliers -part steps -step-size 0.1
//	go run ./stats/changepoint/internal/cpsim -table excursions -series 300
package main

import (
	"flag"
	"fmt"
	"log"
	"math"
	"os"
	"strings"
	"time"

	"github.com/lpmbisect/lpmbisect/stats/changepoint"
	"github.com/lpmbisect/lpmbisect/stats/changepoint/internal/sim"
)

// Noise levels of one night's value, as in the package documentation.
var noises = []struct {
	name string
	sd   float64
}{
	{"icount", 0.0003},
	{"TCG 2 %", 0.02},
	{"TCG 5 %", 0.05},
}

func main() {
	table := flag.String("table", "null", "table to print: null, steps, sweep, outliers or excursions")
	series := flag.Int("series", 1000, "simulated series per row")
	nights := flag.Int("nights", 365, "nights per series")
	seed := flag.Uint64("seed", 1, "random seed")
	nightly := flag.Bool("nightly", true, "null and sweep tables: also replay every night (one pass per night)")
	sigmas := flag.Float64("excursion-sigmas", 0, "outliers table: Options.ExcursionSigmas (0: the default; +Inf: no excursions, the raw values as before them)")
	part := flag.String("part", "all", "outliers table: the null rows, the step rows or all (two processes can share the work)")
	stepSize := flag.Float64("step-size", 0, "outliers table: the step rows of this size alone (0: 3 % and 10 %)")
	flag.Parse()
	log.SetFlags(0)
	start := time.Now()
	var err error
	switch *table {
	case "null":
		err = nullTable(*series, *nights, *seed, *nightly)
	case "steps":
		err = stepsTable(*series, *nights, *seed)
	case "sweep":
		err = sweepTable(*series, *nights, *seed, *nightly)
	case "outliers":
		err = outliersTable(*series, *nights, *seed, *sigmas, *part, *stepSize)
	case "excursions":
		err = excursionsTable(*series, *nights, *seed)
	default:
		log.Fatalf("cpsim: unknown table %q (want null, steps, sweep, outliers or excursions)", *table)
	}
	if err != nil {
		log.Fatalf("cpsim: %v", err)
	}
	fmt.Fprintf(os.Stderr, "cpsim: %s in %v\n", *table, time.Since(start).Round(time.Second))
}

func describe(o changepoint.Options) string {
	o = o.WithDefaults()
	mag := fmt.Sprintf("%.2g%%", 100*o.MinMagnitude)
	if o.MinMagnitude < 1e-6 {
		mag = "none"
	}
	return fmt.Sprintf("P=%.2g EndP=%.2g window=%d minseg=%d mag=%s floor=%.2g",
		o.P, o.EndP, o.Window, o.MinSegment, mag, o.NoiseFloor)
}

func nullTable(series, nights int, seed uint64, nightly bool) error {
	fmt.Printf("%d series of %d nights without a change per row; false change points per series-year.\n\n", series, nights)
	fmt.Println("| noise (night SD) | options | fresh pass over the year | nightly run: reported | nightly run: held at year end | series with a nightly false alarm |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, nz := range noises {
		for _, mag := range []float64{0, 1e-9} {
			o := changepoint.Options{NoiseFloor: nz.sd, MinMagnitude: mag}
			if err := nullRow(nz.name, nz.sd, o, series, nights, seed, nightly); err != nil {
				return err
			}
		}
	}
	// A caller whose floor is wrong: too low by 2.5×, or none at all.
	for _, floor := range []float64{0.02, 0} {
		o := changepoint.Options{NoiseFloor: floor}
		if err := nullRow("TCG 5 %, floor wrong", 0.05, o, series, nights, seed, nightly); err != nil {
			return err
		}
	}
	return nil
}

func nullRow(name string, sd float64, o changepoint.Options, series, nights int, seed uint64, nightly bool) error {
	r, err := sim.Null(sim.NullCase{SD: sd, Options: o}, series, nights, seed, nightly)
	if err != nil {
		return err
	}
	nightlyCol, lastCol, withCol := "—", "—", "—"
	if nightly {
		nightlyCol = fmt.Sprintf("%.3f", r.PerSeriesYear(r.Nightly))
		lastCol = fmt.Sprintf("%.3f", r.PerSeriesYear(r.Last))
		withCol = fmt.Sprintf("%.1f %%", 100*float64(r.SeriesWithNightly)/float64(r.Series))
	}
	fmt.Printf("| %s (%g) | %s | %.3f | %s | %s | %s |\n", name, sd, describe(o),
		r.PerSeriesYear(r.Final), nightlyCol, lastCol, withCol)
	return nil
}

func stepsTable(series, nights int, seed uint64) error {
	fmt.Printf("%d series of %d nights per row, 1 %% noise, two steps per series (nights %d–%d and %d–%d, random direction); "+
		"a change point within %d nights of a step, in its direction, finds it.\n\n",
		series, nights, nights/4, nights/4+nights/6-1, nights*3/5, nights*3/5+nights/5-1, changepoint.DefaultMatchDistance)
	fmt.Println("| step | noise floor given | recall (fresh pass) | precision (fresh pass) | recall (nightly) | precision (nightly) | delay median | delay p90 | delay max | index error max (fresh pass) | index move p99 (nightly) |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|")
	for _, size := range []float64{0.03, 0.10} {
		for _, floor := range []float64{0.01, 0} {
			o := changepoint.Options{NoiseFloor: floor}
			r, err := sim.Steps(sim.StepCase{SD: 0.01, Size: size, Options: o}, series, nights, seed)
			if err != nil {
				return err
			}
			fmt.Printf("| %g %% | %g | %.3f | %.3f | %.3f | %.3f | %d | %d | %d | %d | %d |\n",
				100*size, floor, r.RecallFinal(), r.PrecisionFinal(), r.RecallNightly(), r.PrecisionNightly(),
				sim.Quantile(r.Delays, 0.5), sim.Quantile(r.Delays, 0.9), sim.Quantile(r.Delays, 1),
				sim.Quantile(r.IndexErrors, 1), sim.Quantile(r.Moves, 0.99))
		}
	}
	return nil
}

// sweepTable is how the defaults were chosen: false alarms at TCG noise
// with no magnitude floor (the p-values alone), and the delay of a 3 % step
// under 1 % noise, over the thresholds that trade them.
func sweepTable(series, nights int, seed uint64, nightly bool) error {
	fmt.Printf("%d series of %d nights per row; null rows at 2 %% noise with the noise floor given and no magnitude floor; "+
		"step rows at 1 %% noise, 3 %% steps.\n\n", series, nights)
	fmt.Println("| options | null: fresh pass /series-year | null: nightly /series-year | 3 %: recall (nightly) | 3 %: precision (nightly) | 3 %: delay median | 3 %: delay p90 |")
	fmt.Println("|---|---|---|---|---|---|---|")
	var rows []changepoint.Options
	for _, p := range []float64{1e-3, 3e-4, 1e-4, 3e-5} {
		rows = append(rows, changepoint.Options{P: p, EndP: p / 10})
	}
	for _, w := range []int{20, 50} {
		rows = append(rows, changepoint.Options{Window: w})
	}
	for _, m := range []int{2, 5} {
		rows = append(rows, changepoint.Options{MinSegment: m})
	}
	for _, e := range []float64{1e-4, 1e-6} {
		rows = append(rows, changepoint.Options{EndP: e})
	}
	for _, o := range rows {
		nullOpts := o
		nullOpts.NoiseFloor, nullOpts.MinMagnitude = 0.02, 1e-9
		nr, err := sim.Null(sim.NullCase{SD: 0.02, Options: nullOpts}, series, nights, seed, nightly)
		if err != nil {
			return err
		}
		stepOpts := o
		stepOpts.NoiseFloor = 0.01
		sr, err := sim.Steps(sim.StepCase{SD: 0.01, Size: 0.03, Options: stepOpts}, series, nights, seed)
		if err != nil {
			return err
		}
		nightlyCol := "—"
		if nightly {
			nightlyCol = fmt.Sprintf("%.3f", nr.PerSeriesYear(nr.Nightly))
		}
		d := strings.TrimSuffix(describe(o), " mag=1% floor=0")
		fmt.Printf("| %s | %.3f | %s | %.3f | %.3f | %d | %d |\n", d,
			nr.PerSeriesYear(nr.Final), nightlyCol, sr.RecallNightly(), sr.PrecisionNightly(),
			sim.Quantile(sr.Delays, 0.5), sim.Quantile(sr.Delays, 0.9))
	}
	return nil
}

// outlierRates are the shares of bad nights of the contaminated rows.
var outlierRates = []float64{0, 0.01, 0.05}

// outliersTable is the null and step tables again with bad nights mixed
// in (sim.contaminate), at the default options but the excursion
// threshold, counting confirmed change points beside all those reported.
func outliersTable(series, nights int, seed uint64, sigmas float64, part string, stepSize float64) error {
	if part != "all" && part != "null" && part != "steps" {
		return fmt.Errorf("unknown part %q of the outliers table (want null, steps or all)", part)
	}
	if part != "steps" {
		if err := outliersNullRows(series, nights, seed, sigmas); err != nil {
			return err
		}
	}
	if part == "null" {
		return nil
	}
	sizes := []float64{0.03, 0.10}
	if stepSize != 0 {
		sizes = []float64{stepSize}
	}
	return outliersStepRows(series, nights, seed, sigmas, sizes)
}

func outliersNullRows(series, nights int, seed uint64, sigmas float64) error {
	fmt.Printf("%d series of %d nights per row, default options with the noise floor given, excursion threshold %s; bad nights: that share of nights "+
		"off by 10–50 %% either way, alone or in pairs. False change points per series-year.\n\n", series, nights, threshold(sigmas))
	fmt.Println("| noise (night SD) | bad nights | fresh pass: all | fresh pass: confirmed | nightly: reported | nightly: confirmed | nightly: held at year end | series with a confirmed false alarm | bad nights flagged as excursions | other nights flagged, per series-year |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|")
	for _, nz := range noises {
		for _, rate := range outlierRates {
			c := sim.NullCase{SD: nz.sd, Options: changepoint.Options{NoiseFloor: nz.sd, ExcursionSigmas: sigmas}, Outliers: rate}
			r, err := sim.Null(c, series, nights, seed, true)
			if err != nil {
				return err
			}
			fmt.Printf("| %s (%g) | %g %% | %.3f | %.3f | %.3f | %.3f | %.3f | %.1f %% | %s | %.3f |\n", nz.name, nz.sd, 100*rate,
				r.PerSeriesYear(r.Final), r.PerSeriesYear(r.FinalConfirmed), r.PerSeriesYear(r.Nightly),
				r.PerSeriesYear(r.NightlyConfirmed), r.PerSeriesYear(r.Last), 100*float64(r.SeriesWithConfirmed)/float64(r.Series),
				share(r.TrueExcursions, r.BadNights), r.PerSeriesYear(r.FalseExcursions))
		}
	}
	return nil
}

func outliersStepRows(series, nights int, seed uint64, sigmas float64, sizes []float64) error {
	fmt.Printf("\nSteps under 1 %% noise (floor 0.01), two per series as in the steps table; \"nightly\" counts every change point " +
		"the nightly run reported, \"confirmed\" those it confirmed; delays in nights after the step's first night.\n\n")
	fmt.Println("| step | bad nights | recall (fresh) | precision (fresh) | recall (nightly) | precision (nightly) | recall (confirmed) | precision (confirmed) | delay median, p90, max | delay to confirmation median, p90 | bad nights flagged | other nights flagged, per series-year |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, size := range sizes {
		for _, rate := range outlierRates {
			c := sim.StepCase{SD: 0.01, Size: size, Options: changepoint.Options{NoiseFloor: 0.01, ExcursionSigmas: sigmas}, Outliers: rate}
			r, err := sim.Steps(c, series, nights, seed)
			if err != nil {
				return err
			}
			fmt.Printf("| %g %% | %g %% | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %d, %d, %d | %d, %d | %s | %.3f |\n", 100*size, 100*rate,
				r.RecallFinal(), r.PrecisionFinal(), r.RecallNightly(), r.PrecisionNightly(), r.RecallConfirmed(), r.PrecisionConfirmed(),
				sim.Quantile(r.Delays, 0.5), sim.Quantile(r.Delays, 0.9), sim.Quantile(r.Delays, 1),
				sim.Quantile(r.ConfirmDelays, 0.5), sim.Quantile(r.ConfirmDelays, 0.9),
				share(r.TrueExcursions, r.BadNights), float64(r.FalseExcursions)/float64(series)*365/float64(nights))
		}
	}
	return nil
}

// threshold names an excursion threshold as the tables do.
func threshold(sigmas float64) string {
	switch {
	case sigmas == 0:
		return fmt.Sprintf("%g σ (default)", float64(changepoint.DefaultExcursionSigmas))
	case math.IsInf(sigmas, 1):
		return "off (raw values)"
	}
	return fmt.Sprintf("%g σ", sigmas)
}

// share is a/b as a percentage, or "—" without b.
func share(a, b int) string {
	if b == 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f %%", 100*float64(a)/float64(b))
}

// excursionsTable is how the excursion threshold was chosen: confirmed
// false change points with 1 % bad nights at TCG noise, nights flagged
// that were not bad, and 3 % steps with 1 % bad nights, for thresholds
// from lax to off (+Inf: the pass of raw values).
func excursionsTable(series, nights int, seed uint64) error {
	fmt.Printf("%d series of %d nights per row, default options but the excursion threshold; null rows with 1 %% bad nights "+
		"(confirmed false change points of the nightly run per series-year), clean null rows (other nights flagged as "+
		"excursions per series-year), 3 %% steps under 1 %% noise with 1 %% bad nights (confirmed).\n\n", series, nights)
	fmt.Println("| excursion threshold | null 2 %: confirmed | null 5 %: confirmed | clean 2 %: nights flagged | clean 5 %: nights flagged | 3 %: recall | 3 %: precision | 3 %: delay median, p90 |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for _, sigmas := range []float64{3, 3.5, 4, 5, 6, math.Inf(1)} {
		var cols []string
		for _, rate := range []float64{0.01, 0} {
			for _, sd := range []float64{0.02, 0.05} {
				c := sim.NullCase{SD: sd, Options: changepoint.Options{NoiseFloor: sd, ExcursionSigmas: sigmas}, Outliers: rate}
				r, err := sim.Null(c, series, nights, seed, rate > 0)
				if err != nil {
					return err
				}
				if rate > 0 {
					cols = append(cols, fmt.Sprintf("%.3f", r.PerSeriesYear(r.NightlyConfirmed)))
				} else {
					cols = append(cols, fmt.Sprintf("%.3f", r.PerSeriesYear(r.FalseExcursions)))
				}
			}
		}
		c := sim.StepCase{SD: 0.01, Size: 0.03, Options: changepoint.Options{NoiseFloor: 0.01, ExcursionSigmas: sigmas}, Outliers: 0.01}
		r, err := sim.Steps(c, series, nights, seed)
		if err != nil {
			return err
		}
		name := fmt.Sprintf("%g σ", sigmas)
		if sigmas == changepoint.DefaultExcursionSigmas {
			name += " (default)"
		}
		if math.IsInf(sigmas, 1) {
			name = "off (raw values)"
		}
		fmt.Printf("| %s | %s | %.3f | %.3f | %d, %d |\n", name, strings.Join(cols, " | "), r.RecallConfirmed(), r.PrecisionConfirmed(),
			sim.Quantile(r.Delays, 0.5), sim.Quantile(r.Delays, 0.9))
	}
	return nil
}
