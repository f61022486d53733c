/*
 * bpred.h: the memory plugin's branch model (memcount.c), a model of what
 * a core predicts for the transfers x86flow.h decodes: a return stack
 * buffer for returns, a TAGE predictor for conditional branches, and a
 * branch target buffer with an indirect target array for indirect calls
 * and jumps. Direct calls and jumps are taken as predicted (the branch
 * target buffer's capacity is not modelled). Deterministic: no random
 * replacement. Tested by memplugin/bpred_test.c (vmrunner's
 * TestPluginPredictsBranches); docs/cycles.md names each profile's sizes
 * and where they come from.
 *
 * TAGE follows Seznec and Michaud, "A case for (partially) TAgged
 * GEometric history length branch prediction" (JILP 8, 2006): a bimodal
 * base table and N tables tagged by a hash of the branch address and
 * the last h_i conditional outcomes, h_i geometric from min_hist to
 * max_hist; the longest hit predicts, with its useful bits, allocation
 * on a misprediction in one longer table, and a periodic ageing of the
 * useful bits. Histories are folded into index and tag width as in the
 * paper's reference code's description (a circular shift register per
 * table and width).
 */
#ifndef LPMBISECT_BPRED_H
#define LPMBISECT_BPRED_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define TAGE_MAX_TABLES 16
#define TAGE_HIST_BUF 4096 /* a power of two above every max_hist */
#define RSB_MAX 256

/* What the returns' predictor does when it is empty. */
enum rsb_kind {
    RSB_CIRCULAR, /* a circular array without underflow checking: an empty
                   * stack predicts whatever its slot held (Intel's, by
                   * Wong's microbenchmarks, 2018) */
    RSB_CHECKED,  /* a stack that knows it is empty: the return is then
                   * predicted as an indirect branch (AMD's, same source) */
};

struct bpred_cfg {
    unsigned rsb_depth; /* 0: no branch model */
    enum rsb_kind rsb_kind;
    unsigned log_base;    /* bimodal entries, log2 */
    unsigned tables;      /* tagged tables */
    unsigned log_entries; /* entries per tagged table, log2 */
    unsigned tag_bits;
    unsigned min_hist, max_hist; /* conditional outcomes */
    unsigned log_btb;            /* indirect branches' last targets, log2 */
    unsigned log_ita;            /* indirect target array entries, log2 */
    unsigned ita_hist;           /* targets of indirect branches in its path history */
};

struct tage_entry {
    uint16_t tag;
    int8_t ctr; /* -4..3: taken when >= 0 */
    uint8_t u;  /* 0..3 */
};

struct folded {
    uint32_t comp;
    unsigned clen, olen;
};

struct btb_entry {
    uint64_t pc, target;
    bool varies; /* has gone to more than one target */
};

struct ita_entry {
    uint64_t tag, target;
};

/* Executions and mispredictions of a kind of branch. */
struct bcount {
    uint64_t n, miss;
};

struct bpred {
    struct bpred_cfg cfg;
    /* returns */
    uint64_t rsb[RSB_MAX];
    unsigned top, depth; /* top: next free slot; depth: live entries (RSB_CHECKED) */
    /* conditional */
    uint8_t *base;
    struct tage_entry *t[TAGE_MAX_TABLES];
    unsigned hist[TAGE_MAX_TABLES];
    struct folded fi[TAGE_MAX_TABLES], ft0[TAGE_MAX_TABLES], ft1[TAGE_MAX_TABLES];
    uint8_t ghist[TAGE_HIST_BUF];
    unsigned gptr;
    uint32_t phist;
    int use_alt; /* -8..7: use the alternate prediction for a weak new entry when >= 0 */
    uint64_t updates;
    /* indirect */
    struct btb_entry *btb;
    struct ita_entry *ita;
    uint64_t ipath;
    /* counts since the last bpred_take */
    struct bcount cond, ind, ret;
};

static void fold_init(struct folded *f, unsigned olen, unsigned clen)
{
    f->comp = 0;
    f->olen = olen;
    f->clen = clen;
}

/* fold_update shifts the newest outcome (h[p]) into the folded history
 * and the one that left the window of olen outcomes (h[p + olen]) out. */
static void fold_update(struct folded *f, const uint8_t *h, unsigned p)
{
    f->comp = (f->comp << 1) ^ h[p & (TAGE_HIST_BUF - 1)];
    f->comp ^= (uint32_t)h[(p + f->olen) & (TAGE_HIST_BUF - 1)] << (f->olen % f->clen);
    f->comp ^= f->comp >> f->clen;
    f->comp &= (1u << f->clen) - 1;
}

/* bpred_init sets the model up; false when cfg is out of range. A cfg with
 * rsb_depth 0 is no model at all, and true. */
static bool bpred_init(struct bpred *b, const struct bpred_cfg *cfg)
{
    memset(b, 0, sizeof(*b));
    b->cfg = *cfg;
    if (cfg->rsb_depth == 0) {
        return true;
    }
    if (cfg->rsb_depth > RSB_MAX || cfg->tables < 1 || cfg->tables > TAGE_MAX_TABLES || cfg->log_base < 4 ||
        cfg->log_base > 24 || cfg->log_entries < 4 || cfg->log_entries > 20 || cfg->tag_bits < 4 || cfg->tag_bits > 16 ||
        cfg->min_hist < 1 || cfg->max_hist < cfg->min_hist || cfg->max_hist >= TAGE_HIST_BUF || cfg->log_btb < 4 ||
        cfg->log_btb > 20 || cfg->log_ita < 4 || cfg->log_ita > 20 || cfg->ita_hist > 16) {
        return false;
    }
    b->base = malloc((size_t)1 << cfg->log_base);
    if (!b->base) {
        return false;
    }
    memset(b->base, 2, (size_t)1 << cfg->log_base); /* weakly taken */
    for (unsigned i = 0; i < cfg->tables; i++) {
        /* h_i = min * (max/min)^(i/(N-1)) */
        double ratio = cfg->tables > 1 ? (double)i / (cfg->tables - 1) : 0;
        double h = cfg->min_hist * pow((double)cfg->max_hist / cfg->min_hist, ratio);
        b->hist[i] = (unsigned)(h + 0.5);
        if (i > 0 && b->hist[i] <= b->hist[i - 1]) {
            b->hist[i] = b->hist[i - 1] + 1;
        }
        b->t[i] = calloc((size_t)1 << cfg->log_entries, sizeof(struct tage_entry));
        if (!b->t[i]) {
            return false;
        }
        fold_init(&b->fi[i], b->hist[i], cfg->log_entries);
        fold_init(&b->ft0[i], b->hist[i], cfg->tag_bits);
        fold_init(&b->ft1[i], b->hist[i], cfg->tag_bits - 1);
    }
    b->btb = calloc((size_t)1 << cfg->log_btb, sizeof(struct btb_entry));
    b->ita = calloc((size_t)1 << cfg->log_ita, sizeof(struct ita_entry));
    return b->btb && b->ita;
}

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

static unsigned tage_index(const struct bpred *b, unsigned i, uint64_t pc)
{
    unsigned le = b->cfg.log_entries;
    uint64_t h = pc ^ (pc >> (le - (i % le))) ^ b->fi[i].comp ^ ((uint64_t)(b->phist & 0xffff) << (i % 4));
    return (unsigned)(mix64(h) & (((uint64_t)1 << le) - 1));
}

static uint16_t tage_tag(const struct bpred *b, unsigned i, uint64_t pc)
{
    uint64_t h = (pc >> 1) ^ b->ft0[i].comp ^ ((uint64_t)b->ft1[i].comp << 1);
    return (uint16_t)((mix64(h ^ 0x9e3779b97f4a7c15ull) & ((1u << b->cfg.tag_bits) - 1)) | 1);
}

/* bpred_cond predicts the conditional branch at pc, learns that it went
 * taken, and says whether the prediction missed. */
static bool bpred_cond(struct bpred *b, uint64_t pc, bool taken)
{
    unsigned n = b->cfg.tables, idx[TAGE_MAX_TABLES];
    uint16_t tag[TAGE_MAX_TABLES];
    int provider = -1, alt = -1;
    unsigned bidx = (unsigned)(mix64(pc) & (((uint64_t)1 << b->cfg.log_base) - 1));
    bool base_pred = b->base[bidx] >= 2, pred, alt_pred, prov_pred = false;
    for (int i = (int)n - 1; i >= 0; i--) {
        idx[i] = tage_index(b, (unsigned)i, pc);
        tag[i] = tage_tag(b, (unsigned)i, pc);
    }
    for (int i = (int)n - 1; i >= 0; i--) {
        if (b->t[i][idx[i]].tag == tag[i]) {
            if (provider < 0) {
                provider = i;
            } else if (alt < 0) {
                alt = i;
                break;
            }
        }
    }
    alt_pred = alt >= 0 ? b->t[alt][idx[alt]].ctr >= 0 : base_pred;
    pred = base_pred;
    if (provider >= 0) {
        struct tage_entry *e = &b->t[provider][idx[provider]];
        bool weak_new = (e->ctr == 0 || e->ctr == -1) && e->u == 0;
        prov_pred = e->ctr >= 0;
        pred = weak_new && b->use_alt >= 0 ? alt_pred : prov_pred;
        if (weak_new && prov_pred != alt_pred) {
            if (alt_pred == taken && b->use_alt < 7) {
                b->use_alt++;
            } else if (alt_pred != taken && b->use_alt > -8) {
                b->use_alt--;
            }
        }
    }
    /* allocate on a misprediction, in one longer table whose entry is not useful */
    if (pred != taken && provider < (int)n - 1) {
        bool done = false;
        for (unsigned i = (unsigned)(provider + 1); i < n; i++) {
            struct tage_entry *e = &b->t[i][idx[i]];
            if (e->u == 0) {
                e->tag = tag[i];
                e->ctr = taken ? 0 : -1;
                done = true;
                break;
            }
        }
        if (!done) {
            for (unsigned i = (unsigned)(provider + 1); i < n; i++) {
                struct tage_entry *e = &b->t[i][idx[i]];
                if (e->u > 0) {
                    e->u--;
                }
            }
        }
    }
    /* train the provider (or the base), and its usefulness */
    if (provider >= 0) {
        struct tage_entry *e = &b->t[provider][idx[provider]];
        if (taken && e->ctr < 3) {
            e->ctr++;
        } else if (!taken && e->ctr > -4) {
            e->ctr--;
        }
        if (e->u == 0 && alt < 0) {
            /* a weak provider teaches the base as well */
            if (taken && b->base[bidx] < 3) {
                b->base[bidx]++;
            } else if (!taken && b->base[bidx] > 0) {
                b->base[bidx]--;
            }
        }
        if (prov_pred != alt_pred) {
            if (prov_pred == taken && e->u < 3) {
                e->u++;
            } else if (prov_pred != taken && e->u > 0) {
                e->u--;
            }
        }
    } else if (taken && b->base[bidx] < 3) {
        b->base[bidx]++;
    } else if (!taken && b->base[bidx] > 0) {
        b->base[bidx]--;
    }
    /* age the useful bits: every 2^18 updates, alternately the high and the low bit */
    if ((++b->updates & ((1u << 18) - 1)) == 0) {
        uint8_t keep = (b->updates >> 18) & 1 ? 1 : 2;
        for (unsigned i = 0; i < n; i++) {
            for (size_t j = 0; j < (size_t)1 << b->cfg.log_entries; j++) {
                b->t[i][j].u &= keep;
            }
        }
    }
    /* the histories */
    b->gptr--;
    b->ghist[b->gptr & (TAGE_HIST_BUF - 1)] = taken;
    for (unsigned i = 0; i < n; i++) {
        fold_update(&b->fi[i], b->ghist, b->gptr);
        fold_update(&b->ft0[i], b->ghist, b->gptr);
        fold_update(&b->ft1[i], b->ghist, b->gptr);
    }
    b->phist = (b->phist << 1) ^ (uint32_t)((pc >> 1) & 1);
    b->cond.n++;
    b->cond.miss += pred != taken;
    return pred != taken;
}

static struct btb_entry *btb_of(struct bpred *b, uint64_t pc)
{
    return &b->btb[mix64(pc) & (((uint64_t)1 << b->cfg.log_btb) - 1)];
}

/* indirect_predict is the target predicted for the indirect branch at
 * pc: the indirect target array's, indexed by the branch and the path of
 * the last ita_hist indirect targets, when the branch has gone to more
 * than one target and the array holds its entry; else the last target
 * the branch target buffer holds (0: none). */
static uint64_t indirect_predict(struct bpred *b, uint64_t pc, struct ita_entry **slot)
{
    struct btb_entry *e = btb_of(b, pc);
    uint64_t key = mix64(pc ^ b->ipath * 0x9e3779b97f4a7c15ull);
    struct ita_entry *a = &b->ita[key & (((uint64_t)1 << b->cfg.log_ita) - 1)];
    *slot = a;
    if (e->pc == pc && e->varies && a->tag == (key | 1)) {
        return a->target;
    }
    return e->pc == pc ? e->target : 0;
}

static void indirect_learn(struct bpred *b, uint64_t pc, uint64_t target, struct ita_entry *slot)
{
    struct btb_entry *e = btb_of(b, pc);
    uint64_t key = mix64(pc ^ b->ipath * 0x9e3779b97f4a7c15ull);
    if (e->pc != pc) {
        e->pc = pc, e->target = target, e->varies = false;
    } else if (e->target != target) {
        e->varies = true;
        e->target = target;
    }
    if (e->varies) {
        slot->tag = key | 1;
        slot->target = target;
    }
    if (b->cfg.ita_hist > 0) {
        /* the path: the last ita_hist targets, 4 bits of each */
        uint64_t mask = b->cfg.ita_hist >= 16 ? ~0ull : ((1ull << (4 * b->cfg.ita_hist)) - 1);
        b->ipath = ((b->ipath << 4) ^ (mix64(target) & 0xf)) & mask;
    }
}

/* bpred_indirect predicts the indirect call or jump at pc, learns that it
 * went to target, and says whether the prediction missed. */
static bool bpred_indirect(struct bpred *b, uint64_t pc, uint64_t target)
{
    struct ita_entry *slot;
    bool miss = indirect_predict(b, pc, &slot) != target;
    indirect_learn(b, pc, target, slot);
    b->ind.n++;
    b->ind.miss += miss;
    return miss;
}

/* bpred_call pushes the return address of a call (its fall-through) on the
 * return stack buffer, overwriting the oldest entry when it is full. */
static void bpred_call(struct bpred *b, uint64_t fall)
{
    b->rsb[b->top] = fall;
    b->top = (b->top + 1) % b->cfg.rsb_depth;
    if (b->depth < b->cfg.rsb_depth) {
        b->depth++;
    }
}

/* bpred_ret predicts the return at pc from the return stack buffer,
 * learns that it went to target, and says whether the prediction missed.
 * An empty checked stack predicts it as an indirect branch. */
static bool bpred_ret(struct bpred *b, uint64_t pc, uint64_t target)
{
    bool miss;
    if (b->cfg.rsb_kind == RSB_CHECKED && b->depth == 0) {
        struct ita_entry *slot;
        miss = indirect_predict(b, pc, &slot) != target;
        indirect_learn(b, pc, target, slot);
    } else {
        b->top = (b->top + b->cfg.rsb_depth - 1) % b->cfg.rsb_depth;
        miss = b->rsb[b->top] != target;
        if (b->depth > 0) {
            b->depth--;
        }
    }
    b->ret.n++;
    b->ret.miss += miss;
    return miss;
}

#endif
