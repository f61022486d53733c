package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/wire"
	"github.com/lpmbisect/lpmbisect/workloads"
)

func TestSplitCmdline(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []string
	}{
		{"console=ttyS0 panic=-1\n", []string{"console=ttyS0", "panic=-1"}},
		{`  a  b=1	c `, []string{"a", "b=1", "c"}},
		{`lpmbisect.bench="op=lookup/keys=(random|x y)" quiet`, []string{"lpmbisect.bench=op=lookup/keys=(random|x y)", "quiet"}},
		{`"lpmbisect.bench=a b" z`, []string{"lpmbisect.bench=a b", "z"}},
		{`x=""`, []string{"x="}},
		{"", nil},
	} {
		if got := splitCmdline(tt.in); fmt.Sprintf("%q", got) != fmt.Sprintf("%q", tt.want) {
			t.Errorf("splitCmdline(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

func TestParseCmdlineDefaults(t *testing.T) {
	c, err := parseCmdline("BOOT_IMAGE=/vmlinuz console=ttyS0 panic=-1")
	if err != nil {
		t.Fatalf("parseCmdline() = %v", err)
	}
	if c.params != workloads.DefaultParams {
		t.Errorf("parseCmdline() params = %+v; want %+v", c.params, workloads.DefaultParams)
	}
	if want := (workloads.Params{Entries: 10000, PrefixLen: 32, BatchEntries: workloads.DefaultBatchEntries, Samples: 5, Rounds: 20, Clock: workloads.WallClock}); c.params != want {
		t.Errorf("parseCmdline() params = %+v; want %+v", c.params, want)
	}
	if c.bench.String() != "LPMTrie/op=lookup" || c.port != wire.PortName || c.accel != "" || c.fault != "" || len(c.unknown) != 0 {
		t.Errorf("parseCmdline() = %+v; want the defaults", c)
	}
}

func TestParseCmdline(t *testing.T) {
	c, err := parseCmdline("console=ttyS0 lpmbisect.bench=keys=random$ lpmbisect.samples=3 lpmbisect.entries=100000 " +
		"lpmbisect.rounds=7 lpmbisect.accel=icount lpmbisect.port=other lpmbisect.fault=flood lpmbisect.future=1 lpmbisect.samples=4 " +
		"lpmbisect.prefix_len=24 lpmbisect.batch_entries=5000")
	if err != nil {
		t.Fatalf("parseCmdline() = %v", err)
	}
	want := workloads.Params{Entries: 100000, PrefixLen: 24, BatchEntries: 5000, Samples: 4, Rounds: 7, Clock: workloads.InstructionClock}
	if c.params != want {
		t.Errorf("parseCmdline() params = %+v; want %+v", c.params, want)
	}
	if c.bench.String() != "keys=random$" || c.accel != "icount" || c.port != "other" || c.fault != "flood" {
		t.Errorf("parseCmdline() = %+v; want bench keys=random$, accel icount, port other, fault flood", c)
	}
	if strings.Join(c.unknown, " ") != "lpmbisect.future" {
		t.Errorf("parseCmdline() unknown = %q; want [lpmbisect.future]", c.unknown)
	}
	for accel, clock := range map[string]workloads.Clock{"kvm": workloads.WallClock, "tcg": workloads.WallClock, "icount": workloads.InstructionClock} {
		c, err := parseCmdline("lpmbisect.accel=" + accel)
		if err != nil || c.params.Clock != clock || c.accel != accel {
			t.Errorf("parseCmdline(lpmbisect.accel=%s) = accel %q clock %v, %v; want %s, %v", accel, c.accel, c.params.Clock, err, accel, clock)
		}
	}
}

func TestParseCmdlineRejects(t *testing.T) {
	for _, arg := range []string{
		"lpmbisect.bench=(",
		"lpmbisect.samples=0",
		"lpmbisect.samples=x",
		"lpmbisect.entries=-1",
		"lpmbisect.entries=2147483648",
		"lpmbisect.rounds=",
		"lpmbisect.accel=hvf",
		"lpmbisect.accel=tcg-icount",
		"lpmbisect.port=",
		"lpmbisect.port=../x",
		"lpmbisect.fault=explode",
		"lpmbisect.prefix_len=0",
		"lpmbisect.prefix_len=33",
		"lpmbisect.prefix_len=8", // 256 prefixes < 10000 entries
		"lpmbisect.batch_entries=0",
	} {
		if c, err := parseCmdline("console=ttyS0 " + arg); err == nil {
			t.Errorf("parseCmdline(%q) = %+v, nil; want an error", arg, c)
		}
	}
}
