package agent

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// TestSampleProgramEncodes checks that the sampling program is valid
// bytecode with every jump resolved (the kernel's verdict needs a boot:
// the profile tests of cmd/lpmbisect).
func TestSampleProgramEncodes(t *testing.T) {
	var buf bytes.Buffer
	if err := sampleProgram(3, 4).Marshal(&buf, binary.LittleEndian); err != nil {
		t.Fatalf("sampleProgram().Marshal = %v", err)
	}
}
