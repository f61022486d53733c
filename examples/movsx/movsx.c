// SPDX-License-Identifier: GPL-2.0
/*
 * movsx: an XDP program with one instruction of the BPF ISA v4 (Linux
 * 6.6), a sign-extending move, r1 = (s8)r1 (BPF_ALU64 | BPF_MOV | BPF_X
 * with offset 8). Verifiers before 6.6 reject it ("BPF_MOV uses reserved
 * fields"): Debian 6.12 accepts the program and Debian 6.1 rejects it,
 * which shows how lpmbisect reports a program one kernel stops verifying:
 *
 *	lpmbisect compare --accel icount \
 *		--workload examples/movsx/movsx.o KERNEL-6.1 KERNEL-6.12
 *
 * Debian 12's clang (14) cannot emit v4 instructions (-mcpu=v4 needs clang
 * 18), so the instruction is written as its 8 bytes: opcode 0xbf, source
 * and destination r1 (0x11), offset 8, immediate 0.
 */
#include <linux/bpf.h>

#define SEC(name) __attribute__((section(name), used))

SEC("xdp")
int xdp_movsx(struct xdp_md *ctx)
{
	unsigned long long len = ctx->data_end - ctx->data;

	/* len = (s8)len: a packet of 128 to 255 bytes becomes negative */
	asm volatile("r1 = %[v]\n\t.quad 0x00000000000811bf\n\t%[v] = r1" : [v] "+r"(len) : : "r1");
	return (long long)len < 0 ? XDP_DROP : XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";
