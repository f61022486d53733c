// Package logtail reads the ends of logs: a build's, QEMU's standard
// error, an error message, a boot's console. It is the one reader of log
// tails, and it is bounded: however long a log grew, it reads at most the
// bytes asked for, from the end.
package logtail

import (
	"io"
	"os"
	"strings"
)

// defaultBytes is how much of a log's end File reads: enough for the last
// lines of any build or boot log, little enough to keep in memory.
const defaultBytes = 64 << 10

// Read returns at most limit bytes from the end of the file at path.
func Read(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > limit {
		if _, err := f.Seek(st.Size()-limit, io.SeekStart); err != nil {
			return nil, err
		}
	}
	return io.ReadAll(io.LimitReader(f, limit))
}

// Lines returns the last n lines of text that are not blank and that skip
// (when not nil) does not reject, each with its surrounding space trimmed.
func Lines(text string, n int, skip func(line string) bool) []string {
	var out []string
	for l := range strings.Lines(text) {
		l = strings.TrimSpace(l)
		if l == "" || skip != nil && skip(l) {
			continue
		}
		out = append(out, l)
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out
}

// File returns the last n lines of the file at path as Lines does, read
// from its last defaultBytes; none when it cannot be read.
func File(path string, n int, skip func(line string) bool) []string {
	data, err := Read(path, defaultBytes)
	if err != nil {
		return nil
	}
	return Lines(string(data), n, skip)
}
