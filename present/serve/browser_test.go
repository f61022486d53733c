package serve

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lpmbisect/lpmbisect/history"
	"github.com/lpmbisect/lpmbisect/present/report"
	"github.com/lpmbisect/lpmbisect/present/view"
)

// chromium finds Debian's chromium (scripts/setup installs it). Without it
// the browser test skips, unless LPMBISECT_REQUIRE_VM says the suite must
// run whole (CI), where it fails.
func chromium(t *testing.T) string {
	if p := FindBrowser(); p != "" {
		return p
	}
	if os.Getenv("LPMBISECT_REQUIRE_VM") != "" {
		t.Fatal("no chromium on PATH, and LPMBISECT_REQUIRE_VM is set (apt-get install chromium; scripts/setup does)")
	}
	t.Skip("no chromium on PATH (apt-get install chromium)")
	return ""
}

// TestBrowserTriage drives headless Chromium through a sheriff's triage:
// it opens the bad-night series' page served on loopback, finds the
// change point on its trend plot, triages it without the token (refused,
// nothing changes), then with the token, and reloads to see the new
// state. LPMBISECT_SCREENSHOTS=DIR keeps the screenshots there.
func TestBrowserTriage(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	browser := chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	shots := os.Getenv("LPMBISECT_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	}

	db, base := serveLoopback(t, 60)

	cps, err := db.ChangePoints(ctx, 0, history.ChangeOpen)
	if err != nil || len(cps) == 0 {
		t.Fatalf("change points %v, %v", cps, err)
	}
	cp := cps[0] // the −12 % step
	item := fmt.Sprintf("#cp%d", cp.ID)

	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.WindowSize(1280, 1000),
		chromedp.Flag("disable-dev-shm-usage", true))...) // containers' /dev/shm is small
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(alloc)
	defer cancelBrowser()
	shot := func(name string) chromedp.Action {
		return chromedp.ActionFunc(func(ctx context.Context) error {
			var png []byte
			if err := chromedp.CaptureScreenshot(&png).Do(ctx); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(shots, name), png, 0o644)
		})
	}
	triage := func(token string) chromedp.Tasks {
		return chromedp.Tasks{
			chromedp.SetValue(item+" select[name=action]", "acknowledged", chromedp.ByQuery),
			chromedp.SendKeys(item+" input[name=comment]", "the 6.1 → 6.12 step, expected", chromedp.ByQuery),
			chromedp.SendKeys(item+" input[name=who]", "alice", chromedp.ByQuery),
			chromedp.SendKeys(item+" input[name=token]", token, chromedp.ByQuery),
			chromedp.Click(item+" button", chromedp.ByQuery),
		}
	}

	var plot, state, refused, after, triaged string
	start := time.Now()
	err = chromedp.Run(bctx,
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible("p.latest", chromedp.ByQuery),
		shot("serve-index.png"),
		chromedp.Click(`a[href="/series/public"]`, chromedp.ByQuery),
		chromedp.WaitVisible("svg.plot", chromedp.ByQuery),
		chromedp.Text("figure", &plot, chromedp.ByQuery),
		chromedp.Text(item+" .state", &state, chromedp.ByQuery),
		chromedp.ScrollIntoView(item, chromedp.ByQuery),
		shot("serve-series.png"),
		// Without the token: refused.
		triage("a-guess"),
		chromedp.WaitNotPresent("nav.served", chromedp.ByQuery), // the answer, not the page
		chromedp.WaitVisible("body", chromedp.ByQuery),
		chromedp.Text("body", &refused, chromedp.ByQuery),
		shot("serve-refused.png"),
		chromedp.Navigate(base+report.SeriesPath("public")),
		chromedp.WaitVisible(item, chromedp.ByQuery),
		chromedp.Text(item+" .state", &after, chromedp.ByQuery),
	)
	if err != nil {
		t.Fatalf("browser, before the triage: %v", err)
	}
	// The change point's label on the plot: its change and why it has no
	// culprit (plotLabel), at the night of the step.
	if mark := view.FormatDelta(cp.DeltaPct); !strings.Contains(plot, mark) {
		t.Errorf("the trend plot's text %q does not mark the change point (%s)", plot, mark)
	}
	if state != "open" {
		t.Errorf("change point %d shows state %q; want open", cp.ID, state)
	}
	if !strings.Contains(refused, "401") || after != "open" {
		t.Errorf("triage without the token: page %q, then state %q; want a 401 and still open", refused, after)
	}
	if log, _ := db.TriageLog(ctx, 0); len(log) != 0 {
		t.Errorf("the refused triage left %d rows in the triage log", len(log))
	}

	err = chromedp.Run(bctx,
		triage(testToken),
		chromedp.WaitVisible(item+" .triaged", chromedp.ByQuery), // back on the series' page
		chromedp.Reload(),
		chromedp.WaitVisible(item+" .triaged", chromedp.ByQuery),
		chromedp.Text(item+" .state", &state, chromedp.ByQuery),
		chromedp.Text(item+" .triaged", &triaged, chromedp.ByQuery),
		chromedp.ScrollIntoView(item, chromedp.ByQuery),
		shot("serve-acknowledged.png"),
		chromedp.Navigate(base+report.AlertsPath),
		chromedp.WaitVisible("nav.served", chromedp.ByQuery),
		shot("serve-alerts.png"),
	)
	if err != nil {
		t.Fatalf("browser, the triage: %v", err)
	}
	if state != "acknowledged" || !strings.Contains(triaged, "acknowledged by alice (web)") || !strings.Contains(triaged, "6.1 → 6.12 step") {
		t.Errorf("after the triage and a reload: state %q, %q; want acknowledged by alice with the comment", state, triaged)
	}
	if got, _ := db.ChangePoint(ctx, cp.ID); got.Status != history.ChangeAcknowledged {
		t.Errorf("the history has change point %d %s; want acknowledged", cp.ID, got.Status)
	}
	// A night with its insight block: the text block and the profile's
	// chart, drawn.
	putInsight(t, db, "public", cp.Night, testInsight())
	var block string
	var chartWidth int64
	err = chromedp.Run(bctx,
		chromedp.Navigate(base+report.NightPath("public", cp.Night)),
		chromedp.WaitVisible("pre.insight", chromedp.ByQuery),
		chromedp.Text("pre.insight", &block, chromedp.ByQuery),
		chromedp.ScrollIntoView("pre.insight", chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector("figure svg.plot").getBoundingClientRect().width`, &chartWidth),
		shot("serve-night-insight.png"),
	)
	if err != nil {
		t.Fatalf("browser, the night's insight: %v", err)
	}
	if !strings.Contains(block, "longest_prefix_match.isra.0") || chartWidth < 200 {
		t.Errorf("the night's page: insight block %q, profile chart %d px wide; want the profile's rows and a drawn chart", block, chartWidth)
	}
	t.Logf("browser triage in %v; screenshots in %s", time.Since(start).Round(time.Millisecond), shots)
}
