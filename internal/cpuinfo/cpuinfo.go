// Package cpuinfo reads what Linux's /proc/cpuinfo says about a machine's
// CPUs: the model name and the number of processors. Whatever describes a
// host by its CPU (a calibration key, a fleet worker's entry) reads it here,
// so that two descriptions of one host agree.
package cpuinfo

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// path is where Linux lists the CPUs.
const path = "/proc/cpuinfo"

// maxRead bounds what Parse reads: /proc/cpuinfo of a 256-CPU machine is
// about 400 KiB.
const maxRead = 4 << 20

// Info is what /proc/cpuinfo says about the CPUs.
type Info struct {
	// Model is the model name of the first processor that has one: x86's
	// and 32-bit ARM's "model name", else the "Model" line some ARM
	// kernels add for the board (Raspberry Pi) or MIPS's "cpu model". It
	// is "" when the text names no model, as an arm64 kernel without board
	// lines does (it lists implementer and part numbers only).
	Model string
	// Count is the number of processors listed (whether or not this
	// process may run on them).
	Count int
}

// ErrNoProcessor is returned by Parse for a text that lists no processor.
var ErrNoProcessor = errors.New("no processor listed")

// Parse reads the Info from the text of /proc/cpuinfo.
func Parse(cpuinfo io.Reader) (Info, error) {
	var info Info
	sc := bufio.NewScanner(io.LimitReader(cpuinfo, maxRead))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		switch k, v = strings.TrimSpace(k), strings.TrimSpace(v); k {
		case "processor":
			info.Count++
		case "model name", "Model", "cpu model":
			if info.Model == "" {
				info.Model = v
			}
		}
	}
	if err := sc.Err(); err != nil {
		return Info{}, err
	}
	if info.Count == 0 {
		return Info{}, ErrNoProcessor
	}
	return info, nil
}

// Read returns the Info of the machine this process runs on.
func Read() (Info, error) {
	f, err := os.Open(path)
	if err != nil {
		return Info{}, fmt.Errorf("%w (is /proc mounted?)", err)
	}
	defer f.Close()
	info, err := Parse(f)
	if err != nil {
		return Info{}, fmt.Errorf("%s: %w", path, err)
	}
	return info, nil
}
