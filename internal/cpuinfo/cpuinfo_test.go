package cpuinfo

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestParseTexts reads texts of /proc/cpuinfo as the kernels of both
// architectures print them (testdata/README names where each comes from).
func TestParseTexts(t *testing.T) {
	for _, tc := range []struct {
		file  string
		model string
		count int
	}{
		// x86: "model name" on every processor.
		{"x86_64-amd-epyc.txt", "AMD EPYC", 2},
		// arm64 upstream: implementer and part numbers, no model.
		{"arm64-neoverse-n1.txt", "", 4},
		// arm64 with the Raspberry Pi kernel's board lines: "Model".
		{"arm64-raspberry-pi-4.txt", "Raspberry Pi 4 Model B Rev 1.1", 4},
		// 32-bit ARM: "model name" on every processor comes first, the
		// board's "Model" last.
		{"armv7-raspberry-pi-3.txt", "ARMv7 Processor rev 4 (v7l)", 4},
	} {
		f, err := os.Open(filepath.Join("testdata", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		info, err := Parse(f)
		f.Close()
		if err != nil || info.Model != tc.model || info.Count != tc.count {
			t.Errorf("Parse(%s) = %+v, %v; want model %q, %d processors", tc.file, info, err, tc.model, tc.count)
		}
	}
}

func TestParse(t *testing.T) {
	const cpuinfo = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\n\nprocessor\t: 1\nmodel name\t: AMD EPYC 7B13\n"
	info, err := Parse(strings.NewReader(cpuinfo))
	if err != nil || info.Model != "AMD EPYC 7B13" || info.Count != 2 {
		t.Errorf("Parse = %+v, %v; want AMD EPYC 7B13 with 2 CPUs", info, err)
	}
	if info, err := Parse(strings.NewReader("garbage")); !errors.Is(err, ErrNoProcessor) {
		t.Errorf("Parse(garbage) = %+v, %v; want ErrNoProcessor", info, err)
	}
}

// TestRead reads this machine's /proc/cpuinfo, which lists at least the
// processor this test runs on.
func TestRead(t *testing.T) {
	if _, err := os.Stat(path); err != nil {
		t.Skipf("no %s: %v", path, err)
	}
	info, err := Read()
	if err != nil || info.Count < 1 {
		t.Errorf("Read() = %+v, %v; want at least one processor", info, err)
	}
}
