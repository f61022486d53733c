package fleet

import (
	"io"
	"log"
	"log/slog"
	"strings"

	"github.com/lpmbisect/lpmbisect/history"
	"github.com/lpmbisect/lpmbisect/internal/cpuinfo"
)

// hostCPUModel returns the host CPU's model name as a calibration key
// names it (cpuinfo.Info.Model), or "" when /proc/cpuinfo does not say.
func hostCPUModel() string {
	cpus, err := cpuinfo.Read()
	if err != nil {
		return ""
	}
	return cpus.Model
}

// slogTo returns a slog.Logger that writes River's messages (warnings and
// errors) to lg, one line each, without timestamps (the journal or the
// logger adds its own) and with the database password scrubbed.
func slogTo(lg *log.Logger, scrub history.Scrubber) *slog.Logger {
	if lg == nil {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	w := &lineWriter{lg: lg, scrub: scrub}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{
		Level: slog.LevelWarn,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
}

// lineWriter passes each line written to it to a log.Logger.
type lineWriter struct {
	lg    *log.Logger
	scrub history.Scrubber
}

func (w *lineWriter) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		w.lg.Print("river: " + w.scrub.Text(line))
	}
	return len(p), nil
}
