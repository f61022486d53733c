// SPDX-License-Identifier: GPL-2.0
/*
 * broken: an XDP program the verifier must reject (it reads the packet
 * without checking its length), to show what lpmbisect says about one, and
 * a kprobe program, a type that BPF_PROG_TEST_RUN does not run.
 */
#include <linux/bpf.h>

#define SEC(name) __attribute__((section(name), used))

SEC("xdp")
int xdp_unchecked(struct xdp_md *ctx)
{
	unsigned char *data = (void *)(long)ctx->data;

	return data[20] == 17 ? XDP_DROP : XDP_PASS;
}

SEC("kprobe/__x64_sys_gettid")
int kprobe_gettid(void *ctx)
{
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
