package agent

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lpmbisect/lpmbisect/wire"
)

// TestGateWaitsForGo checks the pacing protocol: before each step the
// guest writes a ready note numbered from 1, inside the trailer's checksum,
// and then nothing until the host's go line.
func TestGateWaitsForGo(t *testing.T) {
	c, host := port(t, false)
	w := wire.NewWriter(c)
	var early []string
	h := serve(host, func(step int, in *bufio.Reader) {
		time.Sleep(50 * time.Millisecond) // time for a guest that does not wait to write on
		fds := []unix.PollFd{{Fd: int32(host.Fd()), Events: unix.POLLIN}}
		if n, _ := unix.Poll(fds, 0); n > 0 || in.Buffered() > 0 {
			early = append(early, fmt.Sprintf("step %d", step))
		}
	})
	g := &gate{w: w, ch: c}
	for step := 1; step <= 3; step++ {
		if err := g.wait(); err != nil {
			t.Fatalf("gate step %d: %v", step, err)
		}
		if err := w.Note(wire.KeyInfo, fmt.Sprintf("took step %d", step)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.End(); err != nil {
		t.Fatal(err)
	}
	c.close()
	got := h.wait(t)

	if len(early) > 0 {
		t.Errorf("the guest wrote on before the host's go at %s", strings.Join(early, ", "))
	}
	if fmt.Sprint(h.readies) != "[1 2 3]" {
		t.Errorf("ready notes for steps %v; want [1 2 3]", h.readies)
	}
	lines := strings.Split(strings.TrimSuffix(string(got), "\n"), "\n")
	want := []string{
		"lpmbisect-ready: 1", "lpmbisect-info: took step 1",
		"lpmbisect-ready: 2", "lpmbisect-info: took step 2",
		"lpmbisect-ready: 3", "lpmbisect-info: took step 3",
	}
	if len(lines) != len(want)+1 || strings.Join(lines[:len(want)], "\n") != strings.Join(want, "\n") {
		t.Errorf("the host read\n%s\nwant\n%s\nthen the trailer", got, strings.Join(want, "\n"))
	}
	if s := wire.Decode(got); !s.Complete || len(s.Notes) != 3 {
		t.Errorf("Decode: complete %v (%s), %d notes; want a complete stream with the 3 info notes and no ready note", s.Complete, s.Problem, len(s.Notes))
	}
}

// TestGateHostGone checks that a paced guest whose host is gone stops with
// an error naming the step, rather than running on unpaced.
func TestGateHostGone(t *testing.T) {
	c, host := hostEnd(t, false)
	go func() {
		bufio.NewReader(host).ReadString('\n')
		host.Close()
	}()
	g := &gate{w: wire.NewWriter(c), ch: c}
	err := g.wait()
	if !errors.Is(err, io.EOF) || !strings.Contains(err.Error(), "before step 1") {
		t.Errorf("gate.wait(host gone) = %v; want io.EOF before step 1", err)
	}
}
