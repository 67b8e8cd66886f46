/*
 * expr/xsum.h - exact, order-independent sums of doubles with integer
 * weights (a Kulisch-style superaccumulator).
 *
 * Floating-point addition is not associative, so a SUM over DOUBLE kept by
 * adding and subtracting changes would depend on step boundaries and worker
 * count, and would drift after deletions (insert x, delete x, left with
 * 1e-17). XSum keeps the exact sum as a fixed-point integer spanning the
 * whole double range, in 32-bit digits held in int64 limbs (room for 2^30
 * additions between carry propagations); the result is the exact sum
 * rounded once to the nearest double. NaN and infinities are counted
 * separately, so they can be retracted too.
 */
#ifndef SL_EXPR_XSUM_H
#define SL_EXPR_XSUM_H

#include "../base/base.h"

#define XSUM_LIMBS 68

typedef struct XSum {
    int64_t adds;   /* additions since the last normalization */
    int64_t nan, pinf, ninf; /* weighted counts of special values */
    int64_t limb[XSUM_LIMBS]; /* digit i has weight 2^(32 i - 1074) */
} XSum;

/* sum += x * w (any int64 w). */
void xsum_add(XSum *s, double x, int64_t w);
/* a += b. */
void xsum_merge(XSum *a, const XSum *b);
/* The exact sum rounded to the nearest double (NaN/inf when counted). */
double xsum_value(const XSum *s);

#endif
