// SPDX-License-Identifier: GPL-2.0
/*
 * xdp_hash: a small XDP flow counter, the second example of lpmbisect's
 * --workload (examples/xdp-lpm uses an LPM trie). It looks the packet's
 * IPv4 source and destination addresses up in a hash map of known flows,
 * adds the packet's bytes to the flow's counters, and drops packets of
 * flows marked blocked. Build with ./build.sh (Debian's clang), run with
 *
 *	lpmbisect compare --accel icount --workload examples/xdp-hash/xdp_hash.o \
 *		--workload-maps examples/xdp-hash/flows.txt KERNEL-A KERNEL-B
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

struct flow_key {
	__u32 saddr; /* network order */
	__u32 daddr; /* network order */
};

struct flow_stats {
	__u64 packets;
	__u64 bytes;
	__u32 blocked;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct flow_key);
	__type(value, struct flow_stats);
} flows SEC(".maps");

SEC("xdp")
int xdp_hash(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = data + sizeof(*eth);
	struct flow_key key = {};
	struct flow_stats *st;

	if ((void *)(ip + 1) > end || eth->h_proto != __builtin_bswap16(ETH_P_IP))
		return XDP_PASS;
	key.saddr = ip->saddr;
	key.daddr = ip->daddr;
	st = bpf_map_lookup_elem(&flows, &key);
	if (!st)
		return XDP_PASS;
	__sync_fetch_and_add(&st->packets, 1);
	__sync_fetch_and_add(&st->bytes, end - data);
	return st->blocked ? XDP_DROP : XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";
