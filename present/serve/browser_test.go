package serve

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lpmbisect/lpmbisect/history"
	"github.com/lpmbisect/lpmbisect/present/report"
	"github.com/lpmbisect/lpmbisect/testbed/testseries"
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

// TestBrowserTriage drives headless Chromium through a sheriff's morning
// on the sheriff's-morning series (a −12 % step, a +8 % step, a one-night
// outlier, imported under icount) served on loopback: from the front page
// to a change point's range (on the front page: no click) and its night
// (one click), the alerts page (one click), a plot's point to its night,
// the night's neighbours; then it signs in once with the token (a wrong
// token first: refused, nothing changes), triages both change points
// without typing the token again, presses a card's button without
// choosing (nothing recorded), and checks that a page of another origin
// cannot post a triage (403) and that a name pointed at the server's
// address is not answered (421; Chromium's host resolver maps it, as DNS
// rebinding would). LPMBISECT_SCREENSHOTS=DIR keeps the screenshots there
// (whole pages; serve-triage.png is docs/img's, the window at the card).
func TestBrowserTriage(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	browser := chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	shots := os.Getenv("LPMBISECT_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	}
	loc := filepath.Join(t.TempDir(), "history.db")
	importMorning(t, loc, "bpf-next")
	db, base := serveLoopback(t, loc)
	port := base[strings.LastIndexByte(base, ':')+1:]

	cps, err := db.ChangePoints(ctx, 0, history.ChangeOpen)
	if err != nil || len(cps) != 2 {
		t.Fatalf("change points %+v, %v; want the two steps", cps, err)
	}
	better, worse := cps[0], cps[1] // by night: −12 %, then +8 %
	if better.Night != testseries.Date(testseries.MorningStep) || worse.Night != testseries.Date(testseries.MorningSecondStep) || better.DeltaPct > -11 || worse.DeltaPct < 7 {
		t.Fatalf("change points %+v; want −12 %% on night %d and +8 %% on night %d", cps, testseries.MorningStep, testseries.MorningSecondStep)
	}
	card := func(cp history.ChangePoint) string { return fmt.Sprintf("#cp%d", cp.ID) }

	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.WindowSize(1280, 1000),
		chromedp.Flag("host-resolver-rules", "MAP evil.example 127.0.0.1"), // a rebinding name
		chromedp.Flag("disable-dev-shm-usage", true))...)                   // containers' /dev/shm is small
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(alloc)
	defer cancelBrowser()
	shot := func(name string) chromedp.Action {
		return chromedp.ActionFunc(func(ctx context.Context) error {
			var png []byte
			if err := chromedp.FullScreenshot(&png, 100).Do(ctx); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(shots, name), png, 0o644)
		})
	}
	viewport := func(name string) chromedp.Action { // what the window shows, as docs/img holds it
		return chromedp.ActionFunc(func(ctx context.Context) error {
			var png []byte
			if err := chromedp.CaptureScreenshot(&png).Do(ctx); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(shots, name), png, 0o644)
		})
	}
	var location, text string
	at := func(want string) chromedp.Action { // the page's path is want
		return chromedp.ActionFunc(func(ctx context.Context) error {
			if err := chromedp.Location(&location).Do(ctx); err != nil {
				return err
			}
			if !strings.HasPrefix(strings.TrimPrefix(location, base), want) {
				return fmt.Errorf("at %s; want %s", location, want)
			}
			return nil
		})
	}
	// follow clicks sel, a link or a form's button, and waits for the
	// page it leads to: a click returns before the browser has navigated,
	// and the old page would otherwise answer the next actions (or the
	// next navigation abort a form's post).
	follow := func(sel string) chromedp.Action {
		return chromedp.ActionFunc(func(ctx context.Context) error {
			if err := chromedp.Evaluate(`window.lpmbisectOldPage = true`, nil).Do(ctx); err != nil {
				return err
			}
			if err := chromedp.Click(sel, chromedp.ByQuery).Do(ctx); err != nil {
				return err
			}
			for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
				var fresh bool
				if chromedp.Evaluate(`window.lpmbisectOldPage === undefined && document.readyState === "complete"`, &fresh).Do(ctx) == nil && fresh {
					return nil
				}
				if time.Now().After(deadline) {
					return fmt.Errorf("%s: no page came of the click within a minute", sel)
				}
			}
		})
	}
	logState := func() (int, map[int64]history.ChangeStatus) {
		log, _ := db.TriageLog(ctx, 0)
		states := map[int64]history.ChangeStatus{}
		for _, cp := range cps {
			got, _ := db.ChangePoint(ctx, cp.ID)
			states[cp.ID] = got.Status
		}
		return len(log), states
	}

	// The front page: both change points with their ranges and nights; one
	// click to a change point's night, one to the alerts.
	night := report.NightPath("bpf-next", better.Night)
	var index string
	err = chromedp.Run(bctx,
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible("p.latest", chromedp.ByQuery),
		chromedp.Text("body", &index, chromedp.ByQuery),
		shot("serve-index.png"),
		follow(`ul.changes li.better a[href="`+night+`"]`), // click 1: the change point's night
		chromedp.WaitVisible("p.around", chromedp.ByQuery),
		at(night),
		chromedp.Text("p.around", &text, chromedp.ByQuery),
	)
	if err != nil {
		t.Fatalf("browser, the front page to a night: %v", err)
	}
	for _, want := range []string{"2 open change points", "(better)", "(worse)",
		fmt.Sprintf("(nights %s → %s)", better.BeforeNight, better.Night), fmt.Sprintf("(nights %s → %s)", worse.BeforeNight, worse.Night)} {
		if !strings.Contains(index, want) {
			t.Errorf("the front page does not say %q:\n%s", want, index)
		}
	}
	if !strings.Contains(text, "the night before, "+better.BeforeNight) || !strings.Contains(text, "the night after, "+testseries.Date(testseries.MorningStep+1)) {
		t.Errorf("the night's page links %q; want the nights before and after it", text)
	}
	t.Logf("clicks from the front page: to a change point's range 0 (it shows the range), to its night 1")

	var nightPage, before string
	err = chromedp.Run(bctx,
		chromedp.Text("body", &nightPage, chromedp.ByQuery),
		chromedp.ScrollIntoView("li.change", chromedp.ByQuery),
		shot("serve-night.png"),
		follow(`p.around a[rel="prev"]`),
		chromedp.WaitVisible("p.around", chromedp.ByQuery),
		at(report.NightPath("bpf-next", better.BeforeNight)),
		chromedp.Text("body", &before, chromedp.ByQuery),
		chromedp.Navigate(base+"/"),
		follow(`a.open`), // click 1: the alerts
		chromedp.WaitVisible(card(better), chromedp.ByQuery),
		at(report.AlertsPath),
		shot("serve-alerts.png"),
	)
	if err != nil {
		t.Fatalf("browser, the night and the alerts: %v", err)
	}
	// The step's night: its row's verdict against the last tip, decided by
	// the deterministic rule (instruction counts), and its change point.
	for _, want := range []string{"-12.0% DIFFERENT (better)", fmt.Sprintf("◆ #%d -12.0%% better", better.ID), "Change points next to this night"} {
		if !strings.Contains(nightPage, want) {
			t.Errorf("the step's night page does not say %q", want)
		}
	}
	if !strings.Contains(before, "SAME") || !strings.Contains(before, "Change points next to this night") {
		t.Errorf("the night before the step: %q; want its SAME verdict and the change point after it", before)
	}

	// The series' page: the nights newest first, a page of them; the plot's
	// points and marks carry titles and links; a point opens its night.
	var series string
	var titles []string
	outlier := testseries.Date(testseries.MorningOutlier)
	err = chromedp.Run(bctx,
		chromedp.Navigate(base+report.SeriesPath("bpf-next")),
		chromedp.WaitVisible("svg.plot", chromedp.ByQuery),
		chromedp.Text("body", &series, chromedp.ByQuery),
		chromedp.Evaluate(`[...document.querySelectorAll("svg.plot a title")].map(t => t.textContent)`, &titles),
		shot("serve-series.png"),
		follow(`svg.plot a[href="`+report.NightPath("bpf-next", outlier)+`"] circle`),
		chromedp.WaitVisible("p.around", chromedp.ByQuery),
		at(report.NightPath("bpf-next", outlier)),
	)
	if err != nil {
		t.Fatalf("browser, the series' page: %v", err)
	}
	newest, oldest := strings.Index(series, testseries.Date(59)), strings.Index(series, testseries.Date(30))
	if newest < 0 || oldest < 0 || newest > oldest || !strings.Contains(series, "nights 1–30 of 60, newest first") || !strings.Contains(series, "older nights →") {
		t.Errorf("the series' page: nights at %d (%s) and %d (%s); want the newest 30 first, and a link to the older ones", newest, testseries.Date(59), oldest, testseries.Date(30))
	}
	if len(titles) != 62 || !strings.HasPrefix(titles[0], fmt.Sprintf("change point #%d: ", better.ID)) ||
		!strings.Contains(strings.Join(titles, "\n"), outlier+", tip ") || !strings.Contains(strings.Join(titles, "\n"), "an excursion, left out of the change points") {
		t.Errorf("the plot's titles (%d): %q; want one a change point and one a night, the outlier's saying it is an excursion", len(titles), titles)
	}

	// Sign in: a wrong token is refused and changes nothing; then the
	// token, once.
	signIn := func(token string) chromedp.Tasks {
		return chromedp.Tasks{
			chromedp.SendKeys(`form.signin input[name=who]`, "alice", chromedp.ByQuery),
			chromedp.SendKeys(`form.signin input[name=token]`, token, chromedp.ByQuery),
			follow(`form.signin button`),
		}
	}
	triage := func(cp history.ChangePoint, action, comment string) chromedp.Tasks {
		return chromedp.Tasks{
			chromedp.SetValue(card(cp)+" select[name=action]", action, chromedp.ByQuery),
			chromedp.SendKeys(card(cp)+" input[name=comment]", comment, chromedp.ByQuery),
			follow(card(cp) + " button"),
			chromedp.WaitVisible(card(cp)+" .triaged", chromedp.ByQuery),
		}
	}
	var refused string
	var tokenFields int
	err = chromedp.Run(bctx,
		chromedp.Navigate(base+report.AlertsPath),
		chromedp.WaitVisible("form.signin", chromedp.ByQuery),
		signIn("a-guess-of-the-token"),
		chromedp.WaitNotPresent("nav.served", chromedp.ByQuery), // the answer, not a page
		chromedp.Text("body", &refused, chromedp.ByQuery),
		shot("serve-refused.png"),
	)
	if err != nil {
		t.Fatalf("browser, a wrong token: %v", err)
	}
	if rows, states := logState(); !strings.Contains(refused, "401") || rows != 0 || states[better.ID] != history.ChangeOpen {
		t.Errorf("signing in with a wrong token: %q, %d triage rows, states %v; want a 401 and nothing changed", refused, rows, states)
	}
	var signedIn, triaged string
	err = chromedp.Run(bctx,
		chromedp.Navigate(base+report.AlertsPath),
		chromedp.WaitVisible("form.signin", chromedp.ByQuery),
		signIn(testToken),
		chromedp.WaitVisible(card(better)+" form.triage", chromedp.ByQuery),
		chromedp.Text("form.signin", &signedIn, chromedp.ByQuery),
		chromedp.Navigate(base+report.SeriesPath("bpf-next")), // signed in on every page
		chromedp.WaitVisible(card(better)+" form.triage", chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll("input[name=token]").length`, &tokenFields),
		triage(better, "acknowledged", "the inlined lookup, expected"),
		chromedp.WaitVisible(card(worse)+" form.triage", chromedp.ByQuery),
		triage(worse, "bisect", "find it"),
		chromedp.Text(card(better)+" .triaged", &triaged, chromedp.ByQuery),
		chromedp.ScrollIntoView(card(better), chromedp.ByQuery),
		viewport("serve-triage.png"),
		shot("serve-acknowledged.png"),
	)
	if err != nil {
		t.Fatalf("browser, the triage: %v", err)
	}
	rows, states := logState()
	if !strings.Contains(signedIn, "signed in as alice") || tokenFields != 0 || rows != 2 || states[better.ID] != history.ChangeAcknowledged ||
		!strings.Contains(triaged, "acknowledged by alice (web)") || !strings.Contains(triaged, "the inlined lookup") {
		t.Errorf("after signing in once and triaging both: %q, %d token fields on the page, %d triage rows, states %v, %q; want alice signed in, no token field, 2 rows, acknowledged with the comment",
			signedIn, tokenFields, rows, states, triaged)
	}
	if got, _ := db.ChangePoint(ctx, worse.ID); got.Bisect.State != history.BisectRequested {
		t.Errorf("change point %d's bisection %q; want requested", worse.ID, got.Bisect.State)
	}

	// The card's button without a choice: its state is selected, nothing
	// changes, nothing is recorded.
	err = chromedp.Run(bctx,
		follow(card(better)+" button"),
		chromedp.WaitVisible(card(better)+" .triaged", chromedp.ByQuery),
	)
	if err != nil {
		t.Fatalf("browser, an unchanged triage: %v", err)
	}
	if n, _ := logState(); n != 2 {
		t.Errorf("a triage that changes nothing left %d triage rows; want 2", n)
	}

	// Another site's page (another origin: localhost, not 127.0.0.1) posts
	// a triage form at the server in the signed-in browser: refused.
	evil := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!DOCTYPE html><form method="post" action="%s%s"><input name="id" value="%d"><input name="action" value="muted"><input name="who" value="mallory"><button>win</button></form>`,
			base, report.TriagePath, better.ID)
	}))
	if evil.Listener, err = net.Listen("tcp", "localhost:0"); err != nil {
		t.Fatal(err)
	}
	evil.Start()
	defer evil.Close()
	evilURL := "http://localhost:" + evil.URL[strings.LastIndexByte(evil.URL, ':')+1:]
	var crossSite, rebound string
	err = chromedp.Run(bctx,
		chromedp.Navigate(evilURL),
		follow("button"),
		chromedp.Text("body", &crossSite, chromedp.ByQuery),
		chromedp.Navigate("http://evil.example:"+port+"/"),
		chromedp.Text("body", &rebound, chromedp.ByQuery),
	)
	if err != nil {
		t.Fatalf("browser, another site: %v", err)
	}
	if n, states := logState(); !strings.Contains(crossSite, "403") || !strings.Contains(crossSite, "another site") || n != 2 || states[better.ID] != history.ChangeAcknowledged {
		t.Errorf("a form on another origin: %q, %d triage rows, states %v; want a 403 and nothing changed", crossSite, n, states)
	}
	if !strings.Contains(rebound, "421") || !strings.Contains(rebound, "evil.example") {
		t.Errorf("the pages under a name pointed at the server: %q; want 421", rebound)
	}

	// The outlier's night with its insight block: the text block and the
	// profile's chart, drawn.
	putInsight(t, db, "bpf-next", better.Night, testInsight())
	var block string
	var chartWidth int64
	err = chromedp.Run(bctx,
		chromedp.Navigate(base+report.NightPath("bpf-next", better.Night)),
		chromedp.WaitVisible("pre.insight", chromedp.ByQuery),
		chromedp.Text("pre.insight", &block, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector("figure svg.plot").getBoundingClientRect().width`, &chartWidth),
		shot("serve-night-insight.png"),
	)
	if err != nil {
		t.Fatalf("browser, the night's insight: %v", err)
	}
	if !strings.Contains(block, "longest_prefix_match.isra.0") || chartWidth < 200 {
		t.Errorf("the night's page: insight block %q, profile chart %d px wide; want the profile's rows and a drawn chart", block, chartWidth)
	}
	t.Logf("screenshots in %s", shots)
}
