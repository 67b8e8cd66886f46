/*
 * circuit/otree.h - the ordered contents of one partition, shared by the
 * top-k (op_topk.c) and window (op_window.c) operators.
 *
 * A partition is an order-statistic treap of distinct rows. Each node holds
 * one row's encoding, `sort key || row` (the sort key orders the partition,
 * the full row breaks ties deterministically), and its multiplicity in two
 * versions: w[0] before the current step and w[1] now. Both versions are
 * queryable during a step (positions, selection, prefix sums), so an
 * operator can compute a changed region's old and new output from the same
 * tree; a row deleted in the step stays as a node with w[1] == 0 until the
 * owner calls otree_remove at step end. Priorities are hashes of the
 * encodings, so expected depth is O(log n) whatever the arrival order.
 *
 * Subtree augmentations: per version, the sum of weights (positions), and
 * for each "sum slot" the weighted sum and non-NULL count of one integer
 * value column (window SUM/COUNT/AVG get their frame's first value from
 * prefix sums in O(log n) instead of a scan).
 *
 * Sort keys (otree_sortkey): per ORDER BY column a marker byte (NULL: 0x00
 * when NULLs come first, 0x02 when last; a value: 0x01) then the column's
 * key.h encoding, every byte inverted for DESC, so memcmp order is the
 * requested SQL order.
 *
 * Checkpoints (otree_save, orow_read): a partition is saved as the rows it
 * holds, (partition key, row encoding, multiplicity) tuples, i.e. the
 * operator's input integral; no pointers, no sort keys, no tree shape
 * (positions and sums do not depend on it). Reading a row back checks its
 * bytes first and rebuilds `sort key || row` the way rows arriving in a
 * step are built (push_topk/push_window).
 */
#ifndef SL_CIRCUIT_OTREE_H
#define SL_CIRCUIT_OTREE_H

#include "../base/buf.h"
#include "../expr/chunk.h"
#include "../zset/batch.h"
#include "circuit.h"

/* A decoded value of one column of a node's row (strings point into the
   node's encoding). */
typedef struct OVal {
    int64_t i;
    double f;
    Str s;
    bool null;
} OVal;

/* Subtree sums of one sum slot, per version. */
typedef struct OSum {
    __int128 s[2]; /* sum of w * value over non-NULL values */
    int64_t n[2];  /* sum of w over non-NULL values */
} OSum;

typedef struct ONode ONode;
struct ONode {
    ONode *l, *r, *p;
    uint64_t prio;
    int64_t w[2];   /* multiplicity before the step [0] and now [1] */
    int64_t cnt[2]; /* sums of w over the subtree */
    uint32_t len;   /* bytes of enc */
    uint32_t sklen; /* bytes of the sort key at the start of enc */
    bool changed;   /* in the owner's list of rows changed this step */
    uint8_t *enc;   /* sort key || row encoding, inside this allocation */
};

/* Node layout of one operator: nval decoded values, nsum sum slots (slot j
   sums value sum_of[j]), then the encoding. */
typedef struct OLayout {
    int nval, nsum;
    const int *sum_of;
    size_t off_sum, off_val, off_enc;
} OLayout;

typedef struct OTree {
    ONode *root;
} OTree;

void olayout_init(OLayout *lay, int nval, int nsum, const int *sum_of);
static inline OSum *onode_sums(const OLayout *lay, const ONode *n)
{
    return (OSum *)((uint8_t *)n + lay->off_sum);
}
static inline OVal *onode_vals(const OLayout *lay, const ONode *n)
{
    return (OVal *)((uint8_t *)n + lay->off_val);
}

/* The node holding enc, created (weights 0, values zeroed: the caller sets
   them before giving it weight) when absent; one descent. */
ONode *otree_upsert(const OLayout *lay, OTree *t, const uint8_t *enc, size_t len, size_t sklen,
                    bool *created);
/* Unlink n from t (weights 0 in both versions; the caller frees it). */
void otree_remove(const OLayout *lay, OTree *t, ONode *n);
/* n->w[v] += delta, and the subtree sums of n and its ancestors: touches
   only the path to the root. */
void otree_add(const OLayout *lay, ONode *n, int v, int64_t delta);
/* Free every node. */
void otree_free(OTree *t);

ONode *otree_first(const OTree *t);
ONode *otree_last(const OTree *t);
ONode *otree_next(const ONode *n);
ONode *otree_prev(const ONode *n);
/* Rows (with multiplicity) in version v. */
static inline int64_t otree_count(const OTree *t, int v) { return t->root ? t->root->cnt[v] : 0; }
/* Rows of version v before node n. */
int64_t otree_before(const ONode *n, int v);
/* First node whose encoding is >= key (a key that is a prefix of an
   encoding sorts before it), or NULL. */
ONode *otree_lower(const OTree *t, const uint8_t *key, size_t kn);
/* First node whose encoding is > key and does not start with key, or NULL
   (all nodes before it start with a prefix <= key). */
ONode *otree_beyond(const OTree *t, const uint8_t *key, size_t kn);
/* Node holding row `pos` (0-based) of version v, and which copy of it; NULL
   when pos is out of range. */
ONode *otree_select(const OTree *t, int v, int64_t pos, int64_t *copy);
/* Node holding the k-th (0-based) row of version v whose value of sum slot
   j is not NULL; NULL when there are fewer. */
ONode *otree_select_nn(const OLayout *lay, const OTree *t, int v, int j, int64_t k);
/* Sums of slot j over the first npos rows of version v. */
void otree_prefix_sum(const OLayout *lay, const OTree *t, int v, int j, int64_t npos,
                      __int128 *sum, int64_t *nn);

/* Byte comparison of encodings (shorter prefix first). */
int otree_cmp(const uint8_t *a, size_t an, const uint8_t *b, size_t bn);
/* Compare x's encoding with key: <0, 0 when it starts with key, >0. */
int onode_cmp_key(const ONode *x, const uint8_t *key, size_t kn);
/* Does n's sort key equal m's? */
static inline bool onode_peers(const ONode *n, const ONode *m)
{
    return n->sklen == m->sklen && !memcmp(n->enc, m->enc, n->sklen);
}

/* Append the sort key of row r of c (columns cols[0..n), flags per column)
   to out; tmp is scratch. */
void otree_sortkey(const Chunk *c, int64_t r, const int *cols, const bool *desc,
                   const bool *nulls_first, int n, Buf *out, Buf *tmp);
/* Bytes of the sort key at p (column types and DESC flags). */
size_t otree_sortkey_len(const uint8_t *p, const SqlType *types, const bool *desc, int n);

/* Add the rows of partition t (key[0..kn)) to bb: (key, row encoding,
   multiplicity now). */
void otree_save(const OTree *t, const uint8_t *key, size_t kn, BatchBuilder *bb);

/* Scratch for reading saved rows back (checkpoints do not trust bytes). */
typedef struct ORow {
    const SqlType *types; /* the operator's input columns */
    int ncol;
    Arena *arena;
    Chunk *row;    /* the decoded row (one row; strings point into copy) */
    Buf copy, tmp;
    Buf enc;       /* sort key || row encoding, as the operator builds it */
    size_t sklen;  /* bytes of the sort key at the start of enc */
} ORow;
void orow_init(ORow *r, const SqlType *types, int ncol);
void orow_free(ORow *r);
/* Read a saved tuple of node nd: true, with r->enc and r->sklen set, when
   row[0..rn) is exactly one encoded row of the input types and pk[0..pkn)
   its partition key; false otherwise. */
bool orow_read(ORow *r, const CNode *nd, const uint8_t *pk, size_t pkn, const uint8_t *row,
               size_t rn);

#endif
