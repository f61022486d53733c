package report

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/lpmbisect/lpmbisect/host/measure"
	"github.com/lpmbisect/lpmbisect/host/vmrunner"
)

// Progress reports boots as they go: a progress bar (boots done / planned,
// current kernel, elapsed) when its writer is a terminal, one line per boot
// otherwise, so logs and CI output stay plain.
type Progress struct {
	w     io.Writer
	bar   *progressbar.ProgressBar
	start time.Time
	stop  chan struct{}
}

// NewProgress reports boots to w.
func NewProgress(w io.Writer) *Progress {
	p := &Progress{w: w, start: time.Now()}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.bar = progressbar.NewOptions(1,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetWidth(24),
			progressbar.OptionShowCount(),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionSetPredictTime(false),
			progressbar.OptionSpinnerType(14),
			progressbar.OptionClearOnFinish(),
		)
		// The bar only redraws when told; keep the elapsed time ticking.
		p.stop = make(chan struct{})
		go func(bar *progressbar.ProgressBar) {
			t := time.NewTicker(time.Second)
			defer t.Stop()
			for {
				select {
				case <-p.stop:
					return
				case <-t.C:
					bar.Add(0)
				}
			}
		}(p.bar)
	}
	return p
}

// BootStarts is called before each boot (measure.Runner.OnBootStart).
func (p *Progress) BootStarts(side *measure.Side, boot, done, total int) {
	if p.bar == nil {
		return
	}
	p.bar.ChangeMax(total)
	p.bar.Describe(fmt.Sprintf("boots: %s %s, boot %d", side.Name, side.Label, boot))
	p.bar.Set(done)
}

// BootEnded is called after each boot with what happened
// (measure.Runner.OnBoot).
func (p *Progress) BootEnded(r measure.BootReport) {
	status := string(r.Result.Outcome)
	if r.Result.Outcome != vmrunner.OK {
		status += ": " + r.Result.Detail + " (console: " + r.Result.ConsoleLog + ")"
	} else {
		status += fmt.Sprintf(", %d results over %s", r.Written, r.Result.Channel)
	}
	line := fmt.Sprintf("lpmbisect: [%d/%d] %s %s boot %d (%s): %s in %s, elapsed %s",
		r.Done, r.Total, r.Side.Name, r.Side.Label, r.Boot, r.Result.Accel, status,
		r.Result.Duration.Round(100*time.Millisecond), measure.Elapsed(p.start))
	if p.bar == nil {
		fmt.Fprintln(p.w, line)
		return
	}
	p.bar.ChangeMax(r.Total)
	p.bar.Set(r.Done)
	if r.Result.Outcome != vmrunner.OK { // failures stay on screen above the bar
		p.bar.Clear()
		fmt.Fprintln(p.w, line)
		p.bar.RenderBlank()
	}
}

// Done removes the bar.
func (p *Progress) Done() {
	if p.bar != nil {
		close(p.stop)
		p.bar.Finish()
		p.bar.Clear()
		p.bar = nil
	}
}
