package fleet

import (
	"bufio"
	"io"
	"log"
	"log/slog"
	"os"
	"strings"

	"github.com/lpmbisect/lpmbisect/history"
)

// hostCPUModel returns the host CPU's model name from /proc/cpuinfo, or ""
// when it does not say.
func hostCPUModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, 1<<20))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
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
