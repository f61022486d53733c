// SPDX-License-Identifier: GPL-2.0
/*
 * xdp_lpm: a small XDP firewall, the kind of program lpmbisect's
 * --workload measures. It looks the packet's IPv4 source address up in an
 * LPM trie of blocked prefixes, counts what it sees per CPU, and drops
 * what the trie matches. Build with ./build.sh (Debian's clang), run with
 *
 *	lpmbisect compare --accel icount --workload examples/xdp-lpm/xdp_lpm.o \
 *		--workload-maps examples/xdp-lpm/blocked.txt KERNEL-A KERNEL-B
 *
 * No libbpf headers: the few definitions it needs are below.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>

#define SEC(name) __attribute__((section(name), used))
#define __uint(name, val) int (*name)[val]
#define __type(name, val) typeof(val) *name

static void *(*bpf_map_lookup_elem)(void *map, const void *key) = (void *)BPF_FUNC_map_lookup_elem;

struct lpm_key {
	__u32 prefixlen;
	__u32 addr; /* network order */
};

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1024);
	__type(key, struct lpm_key);
	__type(value, __u32);
} blocked SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} verdicts SEC(".maps");

static __always_inline void count(__u32 verdict)
{
	__u64 *n = bpf_map_lookup_elem(&verdicts, &verdict);

	if (n)
		*n += 1;
}

SEC("xdp")
int xdp_lpm(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = data + sizeof(*eth);
	struct lpm_key key = { .prefixlen = 32 };

	if ((void *)(ip + 1) > end || eth->h_proto != __builtin_bswap16(ETH_P_IP))
		return XDP_PASS;
	key.addr = ip->saddr;
	if (bpf_map_lookup_elem(&blocked, &key)) {
		count(1);
		return XDP_DROP;
	}
	count(0);
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";
