package agent

import (
	"encoding/binary"
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/lpmbisect/lpmbisect/wire"
)

// TestMemMarksMatchWire checks that the user-space marks of
// memmark_amd64.s are `mov $imm32, %edi` (BF imm32) with the immediates
// wire names, in the order of the functions.
func TestMemMarksMatchWire(t *testing.T) {
	src, err := os.ReadFile("memmark_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	fn := regexp.MustCompile(`TEXT ·(mem\w+)\(SB\),NOSPLIT,\$0-0\n\t((?:BYTE \$0x[0-9a-f]{2}; ?){4}BYTE \$0x[0-9a-f]{2})\n`)
	want := map[string]uint32{"memArm": wire.MemArm, "memBegin": wire.MemBegin, "memEnd": wire.MemEnd, "memDisarm": wire.MemDisarm, "memBeginWide": wire.MemBeginWide,
		"memPause": wire.MemPause, "memResume": wire.MemResume, "memWindowStart": wire.MemWindowStart, "memWindowStop": wire.MemWindowStop}
	byteRE := regexp.MustCompile(`\$0x([0-9a-f]{2})`)
	found := 0
	for _, m := range fn.FindAllStringSubmatch(string(src), -1) {
		var code []byte
		for _, b := range byteRE.FindAllStringSubmatch(m[2], -1) {
			v, _ := strconv.ParseUint(b[1], 16, 8)
			code = append(code, byte(v))
		}
		imm, ok := want[m[1]]
		if !ok || code[0] != 0xbf || binary.LittleEndian.Uint32(code[1:]) != imm {
			t.Errorf("%s: % x; want bf and the immediate %#x", m[1], code, imm)
		}
		found++
	}
	if found != len(want) {
		t.Errorf("found %d marks in memmark_amd64.s; want %d", found, len(want))
	}
}
