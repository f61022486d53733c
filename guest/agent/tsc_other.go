//go:build !amd64

package agent

func rdtsc() uint64 { return 0 }

const haveTSC = false
