/*
 * memcount: lpmbisect's QEMU TCG plugin. It models, per vCPU, a
 * set-associative L1 data cache, L1 instruction cache, a unified last
 * level cache and a data TLB, all LRU, and counts their accesses and
 * misses while the guest asks it to, writing one record per counted
 * segment to a file the host reads (docs/memory.md).
 *
 * Built against include/qemu/qemu-plugin.h of Debian's QEMU 7.2 source
 * package (QEMU_PLUGIN_VERSION 1) by scripts/setup.
 *
 * The guest asks with marker instructions: `mov $imm32, %reg` with
 * imm32 = MARK_BASE | code, recognised by their bytes when a block is
 * translated (opcode B8+r, optionally REX.B 41, or C7 C0+r with REX).
 * The BPF JIT emits exactly that for a BPF `r1 = imm` of a positive
 * 32-bit constant, so a BPF program brackets its timed bpf_loop with
 * WINDOW_START/WINDOW_STOP; the guest's user space (Go assembly) opens
 * and closes segments around the operations of one benchmark.
 *
 *   ARM (3)     instrument from now on: the plugin resets, QEMU flushes
 *               its code cache, every block is translated again with
 *               memory and instruction callbacks (until then only the
 *               markers cost anything)
 *   BEGIN (4)   open a segment: counting windows add to it
 *   START (1)   a window opens (the BPF program, after its first clock)
 *   STOP (2)    the window closes (after bpf_loop returns)
 *   END (5)     close the segment: its record is written
 *   DISARM (6)  stop counting and instrumenting new blocks; no reset:
 *               a flush then would free the memory callbacks' arrays
 *               that QEMU 7.2 may still point at (CPUState.plugin_mem_cbs
 *               is not cleared on every exit from a block, upstream's
 *               "accel/tcg: Clear plugin_mem_cbs on TB exit" in 9.0), and
 *               the next helper's memory access in the guest aborts QEMU
 *               in qemu_plugin_vcpu_mem_cb. The blocks translated while
 *               armed keep their callbacks, which return at once, until
 *               QEMU exits. ARM is the one reset: before it no block has
 *               a memory callback, so its flush frees none.
 *
 * Caches are indexed and tagged by guest physical address when QEMU
 * gives one (RAM), else by virtual address; instruction fetches by
 * virtual address (the 7.2 API has no physical address for them); the
 * data TLB by virtual page number. An access that crosses a line
 * touches both lines. Nothing is prefetched.
 *
 * Inside the same windows it also counts what the exact profile needs
 * (docs/insight.md, "Exact profile"): the executions of every
 * instruction, by address (the host names them with the kernel's
 * symbols), the calls by call site and target, the executions of a few
 * instructions mitigations are made of (VERW, LFENCE, WRMSR), and the
 * control transfers by kind. Control flow is decoded from the last
 * instruction of each block when it is translated (decode_flow: call,
 * indirect call, return, jump, indirect jump, conditional jump, other,
 * a rep string instruction (each of whose iterations QEMU runs as a block),
 * or none, with its fall-through and direct target), and resolved when
 * the next block starts (resolve_flow): QEMU 7.2's plugin API has no
 * branch callback, so the successor of a block is the next block that
 * executes. A successor that is neither the fall-through nor the direct
 * target is an interrupt or exception taken between the two blocks.
 *
 * The cycle model (docs/cycles.md), when asked for: a branch model
 * (bpred.h: a return stack buffer, TAGE, an indirect target array) runs
 * on the same resolved transfers and counts mispredictions by kind; an
 * L2 between the L1s and the last level; the locked and serialising
 * instructions executed (x86flow.h, class_of); and with warm=1 the
 * windows of a benchmark's warm-up, before its segment, run the model
 * without counting, so that caches and predictors start the counted
 * operations warm. BEGIN_WIDE (7) opens a segment that also counts the
 * kernel's execution outside the windows (addresses in the upper half),
 * for the deferred work that the operations leave to kworkers, softirqs
 * and RCU callbacks: its counts go to an "outside" bank, written apart;
 * PAUSE (8) and RESUME (9) bracket the guest's harness work inside it (a
 * trie refilled between timed runs), which is not deferred work. With
 * warm=1 the model also runs, uncounted, on every other kernel
 * instruction while armed.
 *
 * Plugin arguments (all
 * optional but outfile):
 *   outfile=PATH  l1d=SIZE:WAYS  l1i=SIZE:WAYS  l2=SIZE:WAYS  llc=SIZE:WAYS (SIZE may end in K or M)
 *   dtlb=ENTRIES:WAYS  line=BYTES  page=BYTES  pcs=N  core=NAME  warm=0|1
 *   bpred=RSB:c|r:LOG_BASE:TABLES:LOG_ENTRIES:TAG_BITS:MIN_HIST:MAX_HIST:LOG_BTB:LOG_ITA:ITA_HIST
 *   (QEMU splits its -plugin argument at commas)
 *
 * Its file (format 3): the model line, then per segment a segment line
 * (with "l2 A M" when an L2 is modelled), an events line (branches and
 * mispredictions by kind with a branch model, locked and serialising
 * instructions), for a wide segment an outside line, an oevents line and
 * a dexec line per kernel instruction executed outside the windows, then
 * the pc, flow, special, exec and call lines; an end line.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <qemu-plugin.h>

#include "x86flow.h"
#include "bpred.h"

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

#define MARK_BASE 0x4c504d00u /* "LPM" */
enum mark { WINDOW_START = 1, WINDOW_STOP, ARM, BEGIN, END, DISARM, BEGIN_WIDE, PAUSE, RESUME, MARK_MAX };

#define MAX_VCPUS 64
#define MAX_SEGMENTS 4096
/* Instructions with memory accesses tracked for attribution. */
#define PC_SLOTS (1u << 18)
/* The pc of the slot of every instruction that found no room. */
#define PC_OVERFLOW UINT64_MAX
/* Call edges (call site, target) tracked per segment. */
#define EDGE_SLOTS (1u << 16)
/* What a count belongs to: the marked windows, (in a wide segment) the
 * kernel's execution outside them, or the windows of a benchmark's
 * warm-up before its segment (warm=1), whose counts are dropped: they
 * only bring the model's caches and predictors to where the hardware's
 * would be. */
enum bank { WINDOW, OUTSIDE, WARMUP, BANKS };


struct cache {
    const char *name;
    uint64_t size, ways, sets, shift; /* shift: log2 of the line (or page) */
    uint64_t *tags;                   /* sets * ways; 0: invalid */
    uint64_t *stamps;
    uint64_t clock;
    uint64_t accesses[BANKS], misses[BANKS];
};

struct pcstat {
    uint64_t pc; /* 0: free */
    uint64_t accesses, l1d, llc, dtlb;
    uint64_t execs;  /* executions inside the windows */
    uint64_t oexecs; /* executions outside them, in a wide segment */
    /* Set when the instruction is translated (again): its length, and,
     * as the last of a block, its flow kind and direct target. */
    uint64_t target;
    uint8_t size, kind, special, cls;
};

struct vcpu {
    struct cache l1d, l1i, l2, llc, dtlb;
    bool counting;       /* inside a window of an open segment, or of a warm-up */
    enum bank win_bank;  /* WINDOW, or WARMUP outside a segment */
    bool paused;         /* between PAUSE and RESUME: the guest's harness, not deferred work */
    /* The last instruction of the block that ran last, inside a window
     * (or, in a wide segment, in the kernel), until the next block starts
     * and resolves it (resolve_flow), and the bank it counts towards. */
    struct pcstat *pending;
    enum bank pending_bank;
    struct bpred bp;
    struct bcount cond[BANKS], ind[BANKS], ret[BANKS];
};

struct edge {
    uint64_t site, target; /* site 0: free */
    uint64_t count;
};

/* Control transfers of a segment, by kind (FLOW_*), with the conditional
 * jumps taken and the successors that were neither fall-through nor
 * target (interrupts and exceptions). */
struct flows {
    uint64_t kinds[FLOW_KINDS];
    uint64_t taken, diverted;
};

static qemu_plugin_id_t plugin_id;
static struct vcpu vcpus[MAX_VCPUS];
static struct pcstat pcs[PC_SLOTS + 1]; /* the last: every pc that did not fit */
static struct edge edges[EDGE_SLOTS + 1]; /* the last: every edge that did not fit */
static struct flows flows;
static unsigned pcs_out = 64;
static FILE *out;
static bool armed, disarmed, in_segment;
/* wide: the open segment also counts the kernel outside the windows. */
static bool wide;
/* warm: windows outside segments run the model, uncounted (warm=1). */
static bool warm;
static uint64_t segments, windows, insns[BANKS], marks[MARK_MAX];
static unsigned nvcpus = 1;
static uint64_t cfg_l1d[2] = {48 * 1024, 12}, cfg_l1i[2] = {32 * 1024, 8}, cfg_l2[2] = {0, 0},
                cfg_llc[2] = {2 * 1024 * 1024, 16}, cfg_dtlb[2] = {64, 4};
/* The branch model (bpred.h); rsb_depth 0: none. */
static struct bpred_cfg cfg_bpred;
/* The core the sizes are of (a CPU profile's name), echoed in the model line. */
static char core_name[32];
static uint64_t line_size = 64, page_size = 4096;
/* Host time spent armed: wall (CLOCK_MONOTONIC) and the vCPU thread's CPU. */
static uint64_t armed_at_wall, armed_at_cpu, armed_wall, armed_cpu;

static uint64_t now_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int log2u(uint64_t v)
{
    int n = 0;
    while (v > 1) {
        if (v & 1) {
            return -1;
        }
        v >>= 1;
        n++;
    }
    return n;
}

static bool cache_init(struct cache *c, const char *name, uint64_t units, uint64_t ways, uint64_t unit)
{
    int shift = log2u(unit);
    c->name = name;
    c->size = units;
    c->ways = ways;
    if (ways == 0 || shift < 0 || units % ways != 0) {
        return false;
    }
    c->sets = units / ways;
    if (c->sets == 0 || log2u(c->sets) < 0) {
        return false;
    }
    c->shift = shift;
    c->tags = calloc(c->sets * ways, sizeof(uint64_t));
    c->stamps = calloc(c->sets * ways, sizeof(uint64_t));
    return c->tags && c->stamps;
}

/* cache_access looks addr up, fills it on a miss (evicting the least
 * recently used way) and reports whether it missed. */
static bool cache_access(struct cache *c, uint64_t addr, enum bank bank)
{
    uint64_t blk = addr >> c->shift;
    uint64_t set = blk & (c->sets - 1);
    uint64_t tag = blk + 1; /* never 0 */
    uint64_t *tags = c->tags + set * c->ways, *stamps = c->stamps + set * c->ways;
    uint64_t victim = 0;
    c->accesses[bank]++;
    c->clock++;
    for (uint64_t w = 0; w < c->ways; w++) {
        if (tags[w] == tag) {
            stamps[w] = c->clock;
            return false;
        }
        if (stamps[w] < stamps[victim]) {
            victim = w;
        }
    }
    c->misses[bank]++;
    tags[victim] = tag;
    stamps[victim] = c->clock;
    return true;
}

static struct vcpu *vcpu_of(unsigned int i)
{
    return &vcpus[i < nvcpus ? i : nvcpus - 1];
}

static bool in_kernel(uint64_t pc)
{
    return (int64_t)pc < 0;
}

/* bank_of says which bank an instruction at pc counts towards on v, and
 * whether it runs the model at all: inside a window, its bank; the kernel
 * outside the windows of a wide segment, OUTSIDE unless the guest paused
 * it (its harness's own work between timed runs); with warm=1 any other
 * kernel execution while armed runs the model uncounted (WARMUP), so that
 * the caches hold what the kernel touched between the windows (a trie
 * refilled by a syscall, a freed node reused). User space outside the
 * windows never runs the model. */
static bool bank_of(const struct vcpu *v, uint64_t pc, enum bank *bank)
{
    if (v->counting) {
        *bank = v->win_bank;
        return true;
    }
    if (!in_kernel(pc)) {
        return false;
    }
    if (wide && in_segment && !v->paused) {
        *bank = OUTSIDE;
        return true;
    }
    if (warm && armed) {
        *bank = WARMUP;
        return true;
    }
    return false;
}

static struct pcstat *pcstat_of(uint64_t pc)
{
    uint64_t h = (pc * 0x9e3779b97f4a7c15ull) >> 46;
    for (unsigned probe = 0; probe < 256; probe++) {
        struct pcstat *p = &pcs[(h + probe) & (PC_SLOTS - 1)];
        if (p->pc == pc) {
            return p;
        }
        if (p->pc == 0) {
            p->pc = pc;
            return p;
        }
    }
    pcs[PC_SLOTS].pc = PC_OVERFLOW;
    return &pcs[PC_SLOTS];
}

/* beyond_l1 looks a line that missed a first-level cache up in the L2,
 * when one is modelled, then in the last level; true when it missed the
 * last level. */
static bool beyond_l1(struct vcpu *v, uint64_t addr, enum bank bank)
{
    if (v->l2.tags && !cache_access(&v->l2, addr, bank)) {
        return false;
    }
    return cache_access(&v->llc, addr, bank);
}

static void data_line(struct vcpu *v, struct pcstat *p, uint64_t addr, enum bank bank)
{
    if (cache_access(&v->l1d, addr, bank)) {
        if (bank == WINDOW) {
            p->l1d++;
        }
        if (beyond_l1(v, addr, bank) && bank == WINDOW) {
            p->llc++;
        }
    }
}

static void mem_cb(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *udata)
{
    struct vcpu *v = vcpu_of(vcpu);
    struct pcstat *p = udata;
    struct qemu_plugin_hwaddr *hw;
    uint64_t addr = vaddr, size;
    enum bank bank;
    if (!bank_of(v, p->pc, &bank)) {
        return;
    }
    if (bank == WINDOW) {
        p->accesses++;
    }
    if (cache_access(&v->dtlb, vaddr, bank) && bank == WINDOW) {
        p->dtlb++;
    }
    hw = qemu_plugin_get_hwaddr(info, vaddr);
    if (hw && qemu_plugin_hwaddr_is_io(hw)) {
        return; /* device memory is not cached */
    }
    if (hw) {
        addr = qemu_plugin_hwaddr_phys_addr(hw);
    }
    size = 1ull << qemu_plugin_mem_size_shift(info);
    data_line(v, p, addr, bank);
    if ((addr & (line_size - 1)) + size > line_size) {
        data_line(v, p, addr + size - 1, bank);
    }
}

static void count_insn(struct vcpu *v, uint64_t pc, enum bank bank)
{
    insns[bank]++;
    if (cache_access(&v->l1i, pc, bank)) {
        /* instruction lines by virtual address, kept apart from physical data lines */
        beyond_l1(v, pc | (1ull << 63), bank);
    }
}

static void insn_cb(unsigned int vcpu, void *udata)
{
    struct vcpu *v = vcpu_of(vcpu);
    struct pcstat *p = udata;
    enum bank bank;
    if (!bank_of(v, p->pc, &bank)) {
        return;
    }
    if (bank == WINDOW) {
        p->execs++;
    } else if (bank == OUTSIDE) {
        p->oexecs++;
    }
    count_insn(v, p->pc, bank);
}

/* insn_untracked_cb counts an instruction that found no room in pcs. */
static void insn_untracked_cb(unsigned int vcpu, void *udata)
{
    struct vcpu *v = vcpu_of(vcpu);
    uint64_t pc = (uint64_t)(uintptr_t)udata;
    enum bank bank;
    if (!bank_of(v, pc, &bank)) {
        return;
    }
    if (bank == WINDOW) {
        pcs[PC_SLOTS].execs++;
    } else if (bank == OUTSIDE) {
        pcs[PC_SLOTS].oexecs++;
    }
    count_insn(v, pc, bank);
}

static void edge_add(uint64_t site, uint64_t target)
{
    uint64_t h = ((site ^ (target * 0x9e3779b97f4a7c15ull)) * 0xff51afd7ed558ccdull) >> 48;
    for (unsigned probe = 0; probe < 64; probe++) {
        struct edge *e = &edges[(h + probe) & (EDGE_SLOTS - 1)];
        if (e->site == site && e->target == target) {
            e->count++;
            return;
        }
        if (e->site == 0) {
            e->site = site, e->target = target, e->count = 1;
            return;
        }
    }
    edges[EDGE_SLOTS].site = edges[EDGE_SLOTS].target = PC_OVERFLOW;
    edges[EDGE_SLOTS].count++;
}

/* predict_flow runs the branch model on the transfer of the block-ending
 * instruction p, whose successor is the block at next, and counts its
 * mispredictions towards bank. A call pushes its return address whatever
 * came next (an interrupt taken before its target still leaves the call
 * made); a conditional branch whose successor is neither its target nor
 * its fall-through was interrupted, and its direction is unknown: it
 * neither counts nor trains. Returns and indirect branches cannot be told
 * from an interrupt taken right after them (the 7.2 API says nothing of
 * interrupts): such a successor counts as their target, which bounds the
 * error by the interrupts in the windows (the irets the segment counts). */
static void predict_flow(struct vcpu *v, struct pcstat *p, uint64_t next, enum bank bank)
{
    uint64_t fall = p->pc + p->size;
    switch (p->kind) {
    case FLOW_CALL:
        bpred_call(&v->bp, fall);
        break;
    case FLOW_CALL_IND:
        v->ind[bank].n++;
        v->ind[bank].miss += bpred_indirect(&v->bp, p->pc, next);
        bpred_call(&v->bp, fall);
        break;
    case FLOW_JMP_IND:
        v->ind[bank].n++;
        v->ind[bank].miss += bpred_indirect(&v->bp, p->pc, next);
        break;
    case FLOW_RET:
        v->ret[bank].n++;
        v->ret[bank].miss += bpred_ret(&v->bp, p->pc, next);
        break;
    case FLOW_JCC:
        if (next == p->target || next == fall) {
            v->cond[bank].n++;
            v->cond[bank].miss += bpred_cond(&v->bp, p->pc, next == p->target && next != fall);
        }
        break;
    default:
        break;
    }
}

/* resolve_flow counts the transfer of the block-ending instruction p now
 * that its successor, the block starting at next, is known. A direct
 * call counts towards its target even when an interrupt came between
 * (the call was made); an indirect one towards its successor, which is
 * the interrupt's entry in that rare case. */
static void resolve_flow(struct vcpu *v, struct pcstat *p, uint64_t next, enum bank bank)
{
    uint64_t fall = p->pc + p->size;
    bool model = v->bp.cfg.rsb_depth > 0;
    if (model) {
        predict_flow(v, p, next, bank);
    }
    if (bank != WINDOW) {
        return;
    }
    flows.kinds[p->kind]++;
    switch (p->kind) {
    case FLOW_CALL:
        edge_add(p->pc, p->target);
        flows.diverted += next != p->target;
        break;
    case FLOW_CALL_IND:
        edge_add(p->pc, next);
        break;
    case FLOW_JMP:
        flows.diverted += next != p->target;
        break;
    case FLOW_JCC:
        if (next == p->target) {
            flows.taken++;
        } else if (next != fall) {
            flows.diverted++;
        }
        break;
    case FLOW_NONE:
        flows.diverted += next != fall;
        break;
    case FLOW_REP:
        flows.diverted += next != fall && next != p->pc;
        break;
    default:
        break;
    }
}

/* flow_cb runs before a block's last instruction: inside a window, the
 * instruction waits for the next block to resolve it. */
static void flow_cb(unsigned int vcpu, void *udata)
{
    struct vcpu *v = vcpu_of(vcpu);
    struct pcstat *p = udata;
    enum bank bank;
    if (bank_of(v, p->pc, &bank)) {
        v->pending = p;
        v->pending_bank = bank;
    }
}

/* block_cb runs when a block starts, at pc udata. */
static void block_cb(unsigned int vcpu, void *udata)
{
    struct vcpu *v = vcpu_of(vcpu);
    if (v->pending) {
        resolve_flow(v, v->pending, (uint64_t)(uintptr_t)udata, v->pending_bank);
        v->pending = NULL;
    }
}

/* write_profile writes the segment's exact profile: its transfers by
 * kind, the mitigations' instructions, every instruction executed with
 * its count, every call edge; and clears the edges and flows. */
static void write_profile(void)
{
    uint64_t special[SPECIALS] = {0};
    for (unsigned i = 0; i <= PC_SLOTS; i++) {
        if (pcs[i].execs) {
            special[pcs[i].special] += pcs[i].execs;
        }
    }
    fprintf(out, "flow %" PRIu64 " call %" PRIu64 " icall %" PRIu64 " ret %" PRIu64 " jmp %" PRIu64 " ijmp %" PRIu64
            " jcc %" PRIu64 " taken %" PRIu64 " other %" PRIu64 " rep %" PRIu64 " none %" PRIu64 " diverted %" PRIu64 "\n",
            segments, flows.kinds[FLOW_CALL], flows.kinds[FLOW_CALL_IND], flows.kinds[FLOW_RET], flows.kinds[FLOW_JMP],
            flows.kinds[FLOW_JMP_IND], flows.kinds[FLOW_JCC], flows.taken, flows.kinds[FLOW_OTHER], flows.kinds[FLOW_REP], flows.kinds[FLOW_NONE],
            flows.diverted);
    fprintf(out, "special %" PRIu64, segments);
    for (int k = 1; k < SPECIALS; k++) {
        fprintf(out, " %s %" PRIu64, special_names[k], special[k]);
    }
    fprintf(out, "\n");
    for (unsigned i = 0; i <= PC_SLOTS; i++) {
        if (pcs[i].execs) {
            fprintf(out, "exec %" PRIu64 " %" PRIx64 " %" PRIu64 "\n", segments, pcs[i].pc, pcs[i].execs);
        }
    }
    for (unsigned i = 0; i <= EDGE_SLOTS; i++) {
        if (edges[i].count) {
            fprintf(out, "call %" PRIu64 " %" PRIx64 " %" PRIx64 " %" PRIu64 "\n", segments, edges[i].site, edges[i].target,
                    edges[i].count);
        }
        edges[i].site = edges[i].target = edges[i].count = 0;
    }
    memset(&flows, 0, sizeof(flows));
}

/* Totals of one bank of a segment, over the vCPUs. */
struct totals {
    struct cache c[5]; /* l1d, l1i, llc, dtlb, l2 */
    struct bcount cond, ind, ret;
    uint64_t lock, serial;
};

/* take_totals sums and clears the vCPUs' counts of bank. */
static void take_totals(enum bank bank, struct totals *t)
{
    memset(t, 0, sizeof(*t));
    for (unsigned i = 0; i < nvcpus; i++) {
        struct vcpu *v = &vcpus[i];
        struct cache *cs[5] = {&v->l1d, &v->l1i, &v->llc, &v->dtlb, &v->l2};
        for (int j = 0; j < 5; j++) {
            t->c[j].accesses[0] += cs[j]->accesses[bank];
            t->c[j].misses[0] += cs[j]->misses[bank];
            cs[j]->accesses[bank] = cs[j]->misses[bank] = 0;
        }
        t->cond.n += v->cond[bank].n, t->cond.miss += v->cond[bank].miss;
        t->ind.n += v->ind[bank].n, t->ind.miss += v->ind[bank].miss;
        t->ret.n += v->ret[bank].n, t->ret.miss += v->ret[bank].miss;
        memset(&v->cond[bank], 0, sizeof(v->cond[bank]));
        memset(&v->ind[bank], 0, sizeof(v->ind[bank]));
        memset(&v->ret[bank], 0, sizeof(v->ret[bank]));
    }
    for (unsigned i = 0; i <= PC_SLOTS; i++) {
        uint64_t n = bank == WINDOW ? pcs[i].execs : pcs[i].oexecs;
        if (n && pcs[i].cls == CLASS_LOCK) {
            t->lock += n;
        } else if (n && pcs[i].cls == CLASS_SERIAL) {
            t->serial += n;
        }
    }
}

/* write_events writes what the cost model needs beyond the segment line:
 * the branches executed and mispredicted by kind (with a branch model),
 * the locked and the serialising instructions executed. */
static void write_events(const char *what, const struct totals *t)
{
    fprintf(out, "%s %" PRIu64, what, segments);
    if (cfg_bpred.rsb_depth > 0) {
        fprintf(out, " cond %" PRIu64 " cond_miss %" PRIu64 " ind %" PRIu64 " ind_miss %" PRIu64 " ret %" PRIu64
                " ret_miss %" PRIu64,
                t->cond.n, t->cond.miss, t->ind.n, t->ind.miss, t->ret.n, t->ret.miss);
    }
    fprintf(out, " lock %" PRIu64 " serial %" PRIu64 "\n", t->lock, t->serial);
}

static void write_segment(void)
{
    struct totals w, o;
    struct cache *t = w.c;
    struct pcstat *top[256];
    unsigned ntop = 0, n = pcs_out < 256 ? pcs_out : 256;
    take_totals(WINDOW, &w);
    take_totals(OUTSIDE, &o);
    segments++;
    if (segments > MAX_SEGMENTS || !out) {
        return;
    }
    fprintf(out, "segment %" PRIu64 " windows %" PRIu64 " insns %" PRIu64
            " l1d %" PRIu64 " %" PRIu64 " l1i %" PRIu64 " %" PRIu64
            " llc %" PRIu64 " %" PRIu64 " dtlb %" PRIu64 " %" PRIu64,
            segments, windows, insns[WINDOW], t[0].accesses[0], t[0].misses[0], t[1].accesses[0], t[1].misses[0],
            t[2].accesses[0], t[2].misses[0], t[3].accesses[0], t[3].misses[0]);
    if (cfg_l2[0]) {
        fprintf(out, " l2 %" PRIu64 " %" PRIu64, t[4].accesses[0], t[4].misses[0]);
    }
    fprintf(out, "\n");
    write_events("events", &w);
    if (wide) {
        /* the kernel outside the windows: its totals and its instructions */
        fprintf(out, "outside %" PRIu64 " insns %" PRIu64 " l1d %" PRIu64 " %" PRIu64 " l1i %" PRIu64 " %" PRIu64
                " llc %" PRIu64 " %" PRIu64 " dtlb %" PRIu64 " %" PRIu64,
                segments, insns[OUTSIDE], o.c[0].accesses[0], o.c[0].misses[0], o.c[1].accesses[0], o.c[1].misses[0],
                o.c[2].accesses[0], o.c[2].misses[0], o.c[3].accesses[0], o.c[3].misses[0]);
        if (cfg_l2[0]) {
            fprintf(out, " l2 %" PRIu64 " %" PRIu64, o.c[4].accesses[0], o.c[4].misses[0]);
        }
        fprintf(out, "\n");
        write_events("oevents", &o);
        for (unsigned i = 0; i <= PC_SLOTS; i++) {
            if (pcs[i].oexecs) {
                fprintf(out, "dexec %" PRIu64 " %" PRIx64 " %" PRIu64 "\n", segments, pcs[i].pc, pcs[i].oexecs);
            }
        }
    }
    /* The n instructions with the most misses, by insertion into a sorted array. */
    for (unsigned i = 0; i <= PC_SLOTS; i++) {
        struct pcstat *p = &pcs[i];
        uint64_t m = p->l1d + p->llc + p->dtlb;
        unsigned k;
        if (p->accesses == 0) {
            continue;
        }
        if (ntop == n && m <= top[n - 1]->l1d + top[n - 1]->llc + top[n - 1]->dtlb) {
            continue;
        }
        k = ntop < n ? ntop++ : n - 1;
        while (k > 0 && m > top[k - 1]->l1d + top[k - 1]->llc + top[k - 1]->dtlb) {
            top[k] = top[k - 1];
            k--;
        }
        top[k] = p;
    }
    for (unsigned i = 0; i < ntop; i++) {
        fprintf(out, "pc %" PRIu64 " %" PRIx64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", segments,
                top[i]->pc, top[i]->accesses, top[i]->l1d, top[i]->llc, top[i]->dtlb);
    }
    write_profile();
    for (unsigned i = 0; i <= PC_SLOTS; i++) {
        pcs[i].accesses = pcs[i].l1d = pcs[i].llc = pcs[i].dtlb = pcs[i].execs = pcs[i].oexecs = 0;
    }
    fflush(out);
}

static void register_all(qemu_plugin_id_t id);

static void reset_done(qemu_plugin_id_t id)
{
    register_all(id);
}

static void mark_cb(unsigned int vcpu, void *udata)
{
    enum mark m = (enum mark)(uintptr_t)udata;
    struct vcpu *v = vcpu_of(vcpu);
    marks[m]++;
    switch (m) {
    case WINDOW_START:
        if (in_segment && armed) {
            v->counting = true;
            v->win_bank = WINDOW;
            windows++;
        } else if (warm && armed) {
            v->counting = true;
            v->win_bank = WARMUP;
        }
        break;
    case WINDOW_STOP:
        v->counting = false;
        break;
    case ARM:
        /* Once per boot: a second ARM would flush blocks that have
         * memory callbacks (see DISARM above). */
        if (!armed && !disarmed) {
            armed = true;
            armed_at_wall = now_ns(CLOCK_MONOTONIC);
            armed_at_cpu = now_ns(CLOCK_THREAD_CPUTIME_ID);
            qemu_plugin_reset(plugin_id, reset_done);
        }
        break;
    case DISARM:
        if (armed) {
            armed = false;
            disarmed = true;
            v->counting = false;
            armed_wall += now_ns(CLOCK_MONOTONIC) - armed_at_wall;
            armed_cpu += now_ns(CLOCK_THREAD_CPUTIME_ID) - armed_at_cpu;
        }
        break;
    case PAUSE:
        v->paused = true;
        break;
    case RESUME:
        v->paused = false;
        break;
    case BEGIN:
    case BEGIN_WIDE:
        in_segment = true;
        wide = m == BEGIN_WIDE;
        windows = insns[WINDOW] = insns[OUTSIDE] = 0;
        v->pending = NULL;
        break;
    case END:
        if (in_segment) {
            in_segment = false;
            v->counting = false;
            v->pending = NULL;
            write_segment();
            wide = false;
        }
        break;
    default:
        break;
    }
}

/* marker returns the mark an instruction's bytes encode, or 0. */
static enum mark marker(const uint8_t *b, size_t n)
{
    uint32_t imm;
    if (n == 6 && (b[0] & 0xf0) == 0x40 && (b[0] & 0x08) == 0 && b[1] >= 0xb8 && b[1] <= 0xbf) {
        b++, n--; /* REX without W, then mov r32, imm32 */
    }
    if (n == 7 && (b[0] & 0xf8) == 0x48 && b[1] == 0xc7 && (b[2] & 0xf8) == 0xc0) {
        b += 2, n -= 2; /* mov r/m64, imm32 (sign-extended) */
    } else if (n == 5 && b[0] >= 0xb8 && b[0] <= 0xbf) {
        b++, n--;
    } else {
        return 0;
    }
    if (n != 4) {
        return 0;
    }
    imm = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    if ((imm & 0xffffff00u) != MARK_BASE || (imm & 0xff) == 0 || (imm & 0xff) >= MARK_MAX) {
        return 0;
    }
    return (enum mark)(imm & 0xff);
}

static void tb_trans_cb(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    size_t n = qemu_plugin_tb_n_insns(tb);
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        uint64_t pc = qemu_plugin_insn_vaddr(insn);
        const uint8_t *bytes = qemu_plugin_insn_data(insn);
        size_t size = qemu_plugin_insn_size(insn);
        enum mark m = marker(bytes, size);
        struct pcstat *p;
        if (m) {
            qemu_plugin_register_vcpu_insn_exec_cb(insn, mark_cb, QEMU_PLUGIN_CB_NO_REGS, (void *)(uintptr_t)m);
        }
        if (!armed) {
            continue;
        }
        if (i == 0) {
            qemu_plugin_register_vcpu_tb_exec_cb(tb, block_cb, QEMU_PLUGIN_CB_NO_REGS, (void *)(uintptr_t)pc);
        }
        p = pcstat_of(pc);
        if (p->pc == PC_OVERFLOW) {
            qemu_plugin_register_vcpu_insn_exec_cb(insn, insn_untracked_cb, QEMU_PLUGIN_CB_NO_REGS, (void *)(uintptr_t)pc);
        } else {
            p->size = (uint8_t)size;
            p->special = (uint8_t)special_of(bytes, size);
            p->cls = (uint8_t)class_of(bytes, size);
            qemu_plugin_register_vcpu_insn_exec_cb(insn, insn_cb, QEMU_PLUGIN_CB_NO_REGS, p);
            if (i == n - 1) {
                p->kind = (uint8_t)decode_flow(bytes, size, pc, &p->target);
                qemu_plugin_register_vcpu_insn_exec_cb(insn, flow_cb, QEMU_PLUGIN_CB_NO_REGS, p);
            }
        }
        qemu_plugin_register_vcpu_mem_cb(insn, mem_cb, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW, p);
    }
}

static void at_exit(qemu_plugin_id_t id, void *p)
{
    if (out) {
        fprintf(out, "end segments %" PRIu64 " marks %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
                " armed_ns %" PRIu64 " %" PRIu64 "\n",
                segments, marks[1], marks[2], marks[3], marks[4], marks[5], marks[6], armed_wall, armed_cpu);
        fclose(out);
        out = NULL;
    }
}

static void register_all(qemu_plugin_id_t id)
{
    qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans_cb);
    qemu_plugin_register_atexit_cb(id, at_exit, NULL);
}

/* parse_bpred reads the branch model's sizes (bpred.h), colon-separated:
 * RSB:KIND:LOG_BASE:TABLES:LOG_ENTRIES:TAG_BITS:MIN_HIST:MAX_HIST:LOG_BTB:LOG_ITA:ITA_HIST,
 * KIND c (a checked stack) or r (a circular one). */
static bool parse_bpred(const char *v, struct bpred_cfg *c)
{
    char kind = 0, extra;
    if (sscanf(v, "%u:%c:%u:%u:%u:%u:%u:%u:%u:%u:%u%c", &c->rsb_depth, &kind, &c->log_base, &c->tables, &c->log_entries,
               &c->tag_bits, &c->min_hist, &c->max_hist, &c->log_btb, &c->log_ita, &c->ita_hist, &extra) != 11 ||
        (kind != 'c' && kind != 'r') || c->rsb_depth == 0) {
        return false;
    }
    c->rsb_kind = kind == 'c' ? RSB_CHECKED : RSB_CIRCULAR;
    return true;
}

static bool parse_pair(const char *v, uint64_t pair[2])
{
    char *end;
    pair[0] = strtoull(v, &end, 0);
    if (*end == 'K' || *end == 'k') {
        pair[0] <<= 10, end++;
    } else if (*end == 'M' || *end == 'm') {
        pair[0] <<= 20, end++;
    }
    if (*end != ':') {
        return false;
    }
    pair[1] = strtoull(end + 1, &end, 0);
    return *end == 0;
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
    const char *outfile = NULL;
    plugin_id = id;
    for (int i = 0; i < argc; i++) {
        char *eq = strchr(argv[i], '=');
        const char *k = argv[i], *v = eq ? eq + 1 : "";
        bool ok = eq != NULL;
        if (eq) {
            *eq = 0;
        }
        if (ok && strcmp(k, "outfile") == 0) {
            outfile = v;
        } else if (ok && strcmp(k, "l1d") == 0) {
            ok = parse_pair(v, cfg_l1d);
        } else if (ok && strcmp(k, "l1i") == 0) {
            ok = parse_pair(v, cfg_l1i);
        } else if (ok && strcmp(k, "warm") == 0) {
            warm = strcmp(v, "1") == 0;
            ok = warm || strcmp(v, "0") == 0;
        } else if (ok && strcmp(k, "core") == 0) {
            ok = strlen(v) > 0 && strlen(v) < sizeof(core_name) && strspn(v, "abcdefghijklmnopqrstuvwxyz0123456789-") == strlen(v);
            if (ok) {
                strcpy(core_name, v);
            }
        } else if (ok && strcmp(k, "l2") == 0) {
            ok = parse_pair(v, cfg_l2);
        } else if (ok && strcmp(k, "bpred") == 0) {
            ok = parse_bpred(v, &cfg_bpred);
        } else if (ok && strcmp(k, "llc") == 0) {
            ok = parse_pair(v, cfg_llc);
        } else if (ok && strcmp(k, "dtlb") == 0) {
            ok = parse_pair(v, cfg_dtlb);
        } else if (ok && strcmp(k, "line") == 0) {
            line_size = strtoull(v, NULL, 0);
        } else if (ok && strcmp(k, "page") == 0) {
            page_size = strtoull(v, NULL, 0);
        } else if (ok && strcmp(k, "pcs") == 0) {
            pcs_out = strtoul(v, NULL, 0);
        } else {
            ok = false;
        }
        if (!ok) {
            fprintf(stderr, "memcount: bad argument %s (want outfile=PATH, core=NAME, warm=0|1, l1d|l1i|l2|llc=BYTES:WAYS, dtlb=ENTRIES:WAYS, line=, page=, pcs=, "
                            "bpred=RSB:c|r:LOG_BASE:TABLES:LOG_ENTRIES:TAG_BITS:MIN_HIST:MAX_HIST:LOG_BTB:LOG_ITA:ITA_HIST)\n", k);
            return 1;
        }
    }
    if (!outfile) {
        fprintf(stderr, "memcount: no outfile=PATH\n");
        return 1;
    }
    if (log2u(line_size) < 0 || log2u(page_size) < 0 || pcs_out > 256) {
        fprintf(stderr, "memcount: line and page must be powers of two, pcs at most 256\n");
        return 1;
    }
    if (info->system_emulation && info->system.smp_vcpus > MAX_VCPUS) {
        fprintf(stderr, "memcount: at most %d vCPUs\n", MAX_VCPUS);
        return 1;
    }
    nvcpus = info->system_emulation && info->system.max_vcpus > 0 ? (unsigned)info->system.max_vcpus : 1;
    if (nvcpus > MAX_VCPUS) {
        nvcpus = MAX_VCPUS;
    }
    for (unsigned i = 0; i < nvcpus; i++) {
        struct vcpu *v = &vcpus[i];
        if (!cache_init(&v->l1d, "l1d", cfg_l1d[0] / line_size, cfg_l1d[1], line_size) ||
            !cache_init(&v->l1i, "l1i", cfg_l1i[0] / line_size, cfg_l1i[1], line_size) ||
            (cfg_l2[0] && !cache_init(&v->l2, "l2", cfg_l2[0] / line_size, cfg_l2[1], line_size)) ||
            !cache_init(&v->llc, "llc", cfg_llc[0] / line_size, cfg_llc[1], line_size) ||
            !cache_init(&v->dtlb, "dtlb", cfg_dtlb[0], cfg_dtlb[1], page_size)) {
            fprintf(stderr, "memcount: each cache needs a power-of-two number of sets (size / line / ways)\n");
            return 1;
        }
        if (!bpred_init(&v->bp, &cfg_bpred)) {
            fprintf(stderr, "memcount: branch model out of range or out of memory\n");
            return 1;
        }
    }
    out = fopen(outfile, "w");
    if (!out) {
        perror("memcount: outfile");
        return 1;
    }
    fprintf(out, "memcount 3 l1d %" PRIu64 " %" PRIu64 " l1i %" PRIu64 " %" PRIu64 " llc %" PRIu64 " %" PRIu64
            " dtlb %" PRIu64 " %" PRIu64 " line %" PRIu64 " page %" PRIu64,
            cfg_l1d[0], cfg_l1d[1], cfg_l1i[0], cfg_l1i[1], cfg_llc[0], cfg_llc[1], cfg_dtlb[0], cfg_dtlb[1],
            line_size, page_size);
    if (core_name[0]) {
        fprintf(out, " core %s", core_name);
    }
    if (warm) {
        fprintf(out, " warm 1");
    }
    if (cfg_l2[0]) {
        fprintf(out, " l2 %" PRIu64 " %" PRIu64, cfg_l2[0], cfg_l2[1]);
    }
    if (cfg_bpred.rsb_depth) {
        const struct bpred_cfg *c = &cfg_bpred;
        fprintf(out, " bpred %u:%c:%u:%u:%u:%u:%u:%u:%u:%u:%u", c->rsb_depth, c->rsb_kind == RSB_CHECKED ? 'c' : 'r',
                c->log_base, c->tables, c->log_entries, c->tag_bits, c->min_hist, c->max_hist, c->log_btb, c->log_ita,
                c->ita_hist);
    }
    fprintf(out, "\n");
    fflush(out);
    register_all(id);
    return 0;
}
