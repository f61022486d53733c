package agent

// rdtsc reads the time stamp counter. Under icount it is the guest clock:
// one tick per instruction, skipping ahead while the guest idles.
func rdtsc() uint64

const haveTSC = true
