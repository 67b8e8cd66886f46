/*
 * expr/xsum.c - exact sums of doubles (see xsum.h). A finite double is
 * m * 2^(p - 1074) with integer m < 2^53 and bit position p in [0, 2046];
 * adding it puts (m << (p % 32)) * w into digits p/32 .. p/32+2.
 */
#include "xsum.h"

#include <math.h>

static void normalize(XSum *s)
{
    int64_t carry = 0;
    for (int i = 0; i < XSUM_LIMBS; i++) {
        int64_t v = s->limb[i] + carry;
        carry = v >> 32; /* arithmetic shift: floor division by 2^32 */
        s->limb[i] = v - (carry * 4294967296LL);
    }
    /* carry beyond the top is impossible for sums of < 2^62 doubles */
    s->limb[XSUM_LIMBS - 1] += carry * 4294967296LL;
    s->adds = 0;
}

static void add_digits(XSum *s, uint64_t m, int p, int64_t w)
{
    int d = p >> 5, sh = p & 31;
    unsigned __int128 v = (unsigned __int128)m << sh; /* < 2^85 */
    int64_t c0 = (int64_t)(uint32_t)v, c1 = (int64_t)(uint32_t)(v >> 32),
            c2 = (int64_t)(uint32_t)(v >> 64);
    /* |c| < 2^32: split large weights so that each product fits */
    while (w) {
        int64_t part = w > (1LL << 30) ? (1LL << 30) : w < -(1LL << 30) ? -(1LL << 30) : w;
        if (s->adds >= (1LL << 30) / 2)
            normalize(s);
        s->limb[d] += c0 * part;
        s->limb[d + 1] += c1 * part;
        s->limb[d + 2] += c2 * part;
        s->adds += part < 0 ? -part : part;
        w -= part;
    }
}

void xsum_add(XSum *s, double x, int64_t w)
{
    if (isnan(x)) {
        s->nan += w;
        return;
    }
    if (isinf(x)) {
        if (x > 0)
            s->pinf += w;
        else
            s->ninf += w;
        return;
    }
    if (x == 0 || w == 0)
        return;
    int e;
    double f = frexp(fabs(x), &e); /* |x| = f * 2^e, f in [0.5, 1) */
    uint64_t m = (uint64_t)ldexp(f, 53); /* exact: 53-bit integer */
    int p = e - 53 + 1074;               /* |x| = m * 2^(p - 1074) */
    if (p < 0) {                         /* subnormal: m has trailing zeros */
        m >>= -p;
        p = 0;
    }
    add_digits(s, m, p, x < 0 ? -w : w);
}

void xsum_merge(XSum *a, const XSum *b)
{
    if (a->adds + b->adds >= (1LL << 30) / 2)
        normalize(a);
    for (int i = 0; i < XSUM_LIMBS; i++)
        a->limb[i] += b->limb[i];
    a->adds += b->adds + 1;
    a->nan += b->nan;
    a->pinf += b->pinf;
    a->ninf += b->ninf;
}

double xsum_value(const XSum *in)
{
    if (in->nan || (in->pinf > 0 && in->ninf > 0))
        return NAN;
    if (in->pinf > 0)
        return INFINITY;
    if (in->ninf > 0)
        return -INFINITY;
    XSum s = *in;
    normalize(&s);
    bool neg = s.limb[XSUM_LIMBS - 1] < 0;
    if (neg) { /* magnitude: negate the multi-digit two's complement number */
        int64_t carry = 0;
        for (int i = 0; i < XSUM_LIMBS; i++) {
            int64_t v = -s.limb[i] + carry;
            carry = v >> 32;
            s.limb[i] = v - (carry * 4294967296LL);
        }
    }
    int t = XSUM_LIMBS - 1;
    while (t >= 0 && s.limb[t] == 0)
        t--;
    if (t < 0)
        return 0.0;
    /* top three digits with a sticky bit for the rest: one rounding */
    unsigned __int128 m = 0;
    int lo = t - 2 < 0 ? 0 : t - 2;
    for (int i = t; i >= lo; i--)
        m = (m << 32) | (uint64_t)s.limb[i];
    bool sticky = false;
    for (int i = lo - 1; i >= 0 && !sticky; i--)
        sticky = s.limb[i] != 0;
    if (sticky)
        m |= 1;
    double r = ldexp((double)m, 32 * lo - 1074);
    return neg ? -r : r;
}
