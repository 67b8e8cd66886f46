/*
 * circuit/otree.c - order-statistic treap of a partition's rows (otree.h).
 * In: encoded rows with weights from op_topk.c / op_window.c. Out: rows in
 * order, positions and prefix sums in either version of the step.
 *
 * Invariants: BST order by encoding (memcmp, shorter prefix first); heap
 * order by prio (parent >= child); every node's cnt and sums are those of
 * its subtree. Nothing recurses: depth is expected O(log n) but unbounded.
 */
#include "otree.h"

#include "../base/hash.h"
#include "../base/mem.h"
#include "../zset/key.h"

void olayout_init(OLayout *lay, int nval, int nsum, const int *sum_of)
{
    lay->nval = nval;
    lay->nsum = nsum;
    lay->sum_of = sum_of;
    size_t off = (sizeof(ONode) + 15) & ~(size_t)15;
    lay->off_sum = off;
    off += sizeof(OSum) * (size_t)nsum;
    off = (off + 15) & ~(size_t)15;
    lay->off_val = off;
    off += sizeof(OVal) * (size_t)nval;
    lay->off_enc = off;
}

static ONode *onode_new(const OLayout *lay, const uint8_t *enc, size_t len, size_t sklen)
{
    ONode *n = sl_malloc(lay->off_enc + (len ? len : 1));
    memset(n, 0, lay->off_enc);
    n->enc = (uint8_t *)n + lay->off_enc;
    memcpy(n->enc, enc, len);
    n->len = (uint32_t)len;
    n->sklen = (uint32_t)sklen;
    n->prio = sl_hash(enc, len);
    return n;
}

int otree_cmp(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
    size_t m = an < bn ? an : bn;
    int c = m ? memcmp(a, b, m) : 0;
    if (c)
        return c;
    return (an > bn) - (an < bn);
}

/* Recompute n's augmentations from its children. */
static void fix(const OLayout *lay, ONode *n)
{
    for (int v = 0; v < 2; v++)
        n->cnt[v] = n->w[v] + (n->l ? n->l->cnt[v] : 0) + (n->r ? n->r->cnt[v] : 0);
    if (!lay->nsum)
        return;
    OSum *s = onode_sums(lay, n);
    const OVal *val = onode_vals(lay, n);
    const OSum *ls = n->l ? onode_sums(lay, n->l) : NULL, *rs = n->r ? onode_sums(lay, n->r) : NULL;
    for (int j = 0; j < lay->nsum; j++) {
        const OVal *x = &val[lay->sum_of[j]];
        for (int v = 0; v < 2; v++) {
            __int128 sum = x->null ? 0 : (__int128)x->i * n->w[v];
            int64_t nn = x->null ? 0 : n->w[v];
            if (ls) {
                sum += ls[j].s[v];
                nn += ls[j].n[v];
            }
            if (rs) {
                sum += rs[j].s[v];
                nn += rs[j].n[v];
            }
            s[j].s[v] = sum;
            s[j].n[v] = nn;
        }
    }
}

/* Replace child `old` of p (or the root) by `nw`. */
static void relink(OTree *t, ONode *p, ONode *old, ONode *nw)
{
    if (!p)
        t->root = nw;
    else if (p->l == old)
        p->l = nw;
    else
        p->r = nw;
    if (nw)
        nw->p = p;
}

/* Rotate n above its parent q; fixes q then n. */
static void rotate_up(const OLayout *lay, OTree *t, ONode *n)
{
    ONode *q = n->p, *g = q->p;
    if (q->l == n) {
        q->l = n->r;
        if (n->r)
            n->r->p = q;
        n->r = q;
    } else {
        q->r = n->l;
        if (n->l)
            n->l->p = q;
        n->l = q;
    }
    q->p = n;
    relink(t, g, q, n);
    fix(lay, q);
    fix(lay, n);
}

/* Attach leaf n (weights 0) below parent x on side c, then restore the heap
   order; the ancestors' sums do not change (n weighs nothing). */
static void attach(const OLayout *lay, OTree *t, ONode *n, ONode *x, int c)
{
    n->l = n->r = NULL;
    n->p = x;
    fix(lay, n);
    if (!x)
        t->root = n;
    else if (c < 0)
        x->l = n;
    else
        x->r = n;
    while (n->p && n->p->prio < n->prio)
        rotate_up(lay, t, n);
}

ONode *otree_upsert(const OLayout *lay, OTree *t, const uint8_t *enc, size_t len, size_t sklen,
                    bool *created)
{
    ONode *x = t->root, *parent = NULL;
    int c = 0;
    while (x) {
        c = otree_cmp(enc, len, x->enc, x->len);
        if (!c) {
            *created = false;
            return x;
        }
        parent = x;
        x = c < 0 ? x->l : x->r;
    }
    ONode *n = onode_new(lay, enc, len, sklen);
    attach(lay, t, n, parent, c);
    *created = true;
    return n;
}

void otree_remove(const OLayout *lay, OTree *t, ONode *n)
{
    while (n->l || n->r) {
        ONode *c = !n->l ? n->r : !n->r ? n->l : n->l->prio > n->r->prio ? n->l : n->r;
        rotate_up(lay, t, c);
    }
    relink(t, n->p, n, NULL); /* weighed nothing: no sums change above */
    n->p = NULL;
}

void otree_add(const OLayout *lay, ONode *n, int v, int64_t delta)
{
    n->w[v] += delta;
    if (!lay->nsum) {
        for (ONode *x = n; x; x = x->p)
            x->cnt[v] += delta;
        return;
    }
    const OVal *val = onode_vals(lay, n);
    for (ONode *x = n; x; x = x->p) {
        x->cnt[v] += delta;
        OSum *s = onode_sums(lay, x);
        for (int j = 0; j < lay->nsum; j++) {
            const OVal *y = &val[lay->sum_of[j]];
            if (y->null)
                continue;
            s[j].s[v] += (__int128)y->i * delta;
            s[j].n[v] += delta;
        }
    }
}

void otree_free(OTree *t)
{
    ONode *n = t->root;
    while (n) {
        if (n->l) {
            n = n->l;
        } else if (n->r) {
            n = n->r;
        } else {
            ONode *p = n->p;
            if (p) {
                if (p->l == n)
                    p->l = NULL;
                else
                    p->r = NULL;
            }
            sl_free(n);
            n = p;
        }
    }
    t->root = NULL;
}

ONode *otree_first(const OTree *t)
{
    ONode *x = t->root;
    while (x && x->l)
        x = x->l;
    return x;
}

ONode *otree_last(const OTree *t)
{
    ONode *x = t->root;
    while (x && x->r)
        x = x->r;
    return x;
}

ONode *otree_next(const ONode *n)
{
    if (n->r) {
        n = n->r;
        while (n->l)
            n = n->l;
        return (ONode *)n;
    }
    while (n->p && n->p->r == n)
        n = n->p;
    return n->p;
}

ONode *otree_prev(const ONode *n)
{
    if (n->l) {
        n = n->l;
        while (n->r)
            n = n->r;
        return (ONode *)n;
    }
    while (n->p && n->p->l == n)
        n = n->p;
    return n->p;
}

int64_t otree_before(const ONode *n, int v)
{
    int64_t c = n->l ? n->l->cnt[v] : 0;
    for (; n->p; n = n->p)
        if (n->p->r == n)
            c += n->p->w[v] + (n->p->l ? n->p->l->cnt[v] : 0);
    return c;
}

ONode *otree_lower(const OTree *t, const uint8_t *key, size_t kn)
{
    ONode *x = t->root, *best = NULL;
    while (x) {
        if (otree_cmp(x->enc, x->len, key, kn) >= 0) {
            best = x;
            x = x->l;
        } else {
            x = x->r;
        }
    }
    return best;
}

int onode_cmp_key(const ONode *x, const uint8_t *key, size_t kn)
{
    if (x->len >= kn)
        return kn ? memcmp(x->enc, key, kn) : 0;
    int c = x->len ? memcmp(x->enc, key, x->len) : 0;
    return c ? c : -1;
}

ONode *otree_beyond(const OTree *t, const uint8_t *key, size_t kn)
{
    ONode *x = t->root, *best = NULL;
    while (x) {
        if (onode_cmp_key(x, key, kn) > 0) {
            best = x;
            x = x->l;
        } else {
            x = x->r;
        }
    }
    return best;
}

ONode *otree_select(const OTree *t, int v, int64_t pos, int64_t *copy)
{
    ONode *x = t->root;
    if (pos < 0 || !x || pos >= x->cnt[v])
        return NULL;
    while (x) {
        int64_t lc = x->l ? x->l->cnt[v] : 0;
        if (pos < lc) {
            x = x->l;
        } else if (pos < lc + x->w[v]) {
            if (copy)
                *copy = pos - lc;
            return x;
        } else {
            pos -= lc + x->w[v];
            x = x->r;
        }
    }
    return NULL;
}

ONode *otree_select_nn(const OLayout *lay, const OTree *t, int v, int j, int64_t k)
{
    ONode *x = t->root;
    while (x) {
        int64_t lc = x->l ? onode_sums(lay, x->l)[j].n[v] : 0;
        if (k < lc) {
            x = x->l;
            continue;
        }
        k -= lc;
        int64_t here = onode_vals(lay, x)[lay->sum_of[j]].null ? 0 : x->w[v];
        if (k < here)
            return x;
        k -= here;
        x = x->r;
    }
    return NULL;
}

void otree_prefix_sum(const OLayout *lay, const OTree *t, int v, int j, int64_t npos,
                      __int128 *sum, int64_t *nn)
{
    __int128 s = 0;
    int64_t c = 0;
    ONode *x = t->root;
    while (x && npos > 0) {
        int64_t lc = x->l ? x->l->cnt[v] : 0;
        if (npos <= lc) {
            x = x->l;
            continue;
        }
        if (x->l) {
            s += onode_sums(lay, x->l)[j].s[v];
            c += onode_sums(lay, x->l)[j].n[v];
        }
        npos -= lc;
        const OVal *val = &onode_vals(lay, x)[lay->sum_of[j]];
        int64_t take = npos < x->w[v] ? npos : x->w[v];
        if (!val->null) {
            s += (__int128)val->i * take;
            c += take;
        }
        npos -= take;
        x = x->r;
    }
    *sum = s;
    *nn = c;
}

void otree_sortkey(const Chunk *c, int64_t r, const int *cols, const bool *desc,
                   const bool *nulls_first, int n, Buf *out, Buf *tmp)
{
    for (int j = 0; j < n; j++) {
        const Vec *v = &c->col[cols[j]];
        buf_reset(tmp);
        key_encode(c, &cols[j], 1, r, tmp);
        size_t from = 0;
        if (v->t.nullable) {
            if (v->nul[r]) {
                buf_putc(out, nulls_first[j] ? 0x00 : 0x02);
                continue;
            }
            from = 1; /* key.h's own marker */
        }
        buf_putc(out, 0x01);
        buf_reserve(out, tmp->n - from);
        for (size_t i = from; i < tmp->n; i++)
            out->p[out->n++] = desc[j] ? (uint8_t)~tmp->p[i] : tmp->p[i];
    }
}

size_t otree_sortkey_len(const uint8_t *p, const SqlType *types, const bool *desc, int n)
{
    const uint8_t *s = p;
    for (int j = 0; j < n; j++) {
        if (*p++ != 0x01)
            continue;
        if (type_phys(types[j]) == PHYS_STR) {
            uint8_t end = desc[j] ? 0xff : 0x00;
            while (*p != end)
                p++;
            p++;
        } else {
            SqlType t = types[j];
            t.nullable = 0;
            p = key_skip(p, &t, 1);
        }
    }
    return (size_t)(p - s);
}

/* ---- checkpoints ---------------------------------------------------------- */

void otree_save(const OTree *t, const uint8_t *key, size_t kn, BatchBuilder *bb)
{
    for (const ONode *n = otree_first(t); n; n = otree_next(n))
        bb_add(bb, key, kn, n->enc + n->sklen, n->len - n->sklen, n->w[1]);
}

void orow_init(ORow *r, const SqlType *types, int ncol)
{
    memset(r, 0, sizeof(*r));
    r->types = types;
    r->ncol = ncol;
    r->arena = arena_new(4096);
    r->row = chunk_new(r->arena, ncol, types, 1);
    r->row->n = 1;
}

void orow_free(ORow *r)
{
    arena_free(r->arena);
    buf_free(&r->copy);
    buf_free(&r->tmp);
    buf_free(&r->enc);
}

/* Is p[0..n) exactly one encoded row of r's types? Walks a copy padded with
   zeros (kept in r->copy for decoding): key_skip then stays inside the
   padding for one column (at most a marker and 8 bytes, and a string ends
   at the first zero), and the walk stops at the first column that ends
   past n. */
static bool row_valid(ORow *r, const uint8_t *p, size_t n)
{
    enum { PAD = 16 };
    buf_reset(&r->copy);
    buf_reserve(&r->copy, n + PAD);
    if (n)
        memcpy(r->copy.p, p, n);
    memset(r->copy.p + n, 0, PAD);
    r->copy.n = n + PAD;
    const uint8_t *q = r->copy.p, *end = r->copy.p + n;
    for (int j = 0; j < r->ncol; j++) {
        if (r->types[j].nullable && (q >= end || *q > 0x01))
            return false;
        q = key_skip(q, &r->types[j], 1);
        if (q > end)
            return false;
    }
    return q == end;
}

bool orow_read(ORow *r, const CNode *nd, const uint8_t *pk, size_t pkn, const uint8_t *row,
               size_t rn)
{
    if (!row_valid(r, row, rn))
        return false;
    key_decode(r->copy.p, r->types, r->ncol, r->row, 0, 0);
    buf_reset(&r->tmp);
    key_encode(r->row, nd->part, nd->npart, 0, &r->tmp);
    if (r->tmp.n != pkn || (pkn && memcmp(r->tmp.p, pk, pkn)))
        return false;
    buf_reset(&r->enc);
    otree_sortkey(r->row, 0, nd->ord, nd->ord_desc, nd->ord_nulls_first, nd->nord, &r->enc,
                  &r->tmp);
    r->sklen = r->enc.n;
    buf_append(&r->enc, row, rn);
    return true;
}
