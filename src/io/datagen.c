/*
 * io/datagen.c - the datagen input transport's generation: rows of
 * Feldera's datagen connector written straight into Chunks.
 *
 * In: the connector's transport "config" JSON and the table's columns
 * (datagen_new), validated by datagen_config.c into plans of per-column
 * Fields (datagen_int.h); datagen_new then derives the draw streams and the
 * zipf tables. Out: rows [start, start+count) of a plan, appended to a Chunk
 * a column at a time (datagen_fill). A transport thread (tr_datagen.c) or a
 * worker (a Piece's fill) asks for row ranges; datagen keeps no state
 * between calls.
 *
 * Determinism. Every value is a pure function of (seed, plan index, row
 * index, column index): random strategies draw from a counter-based
 * generator, value = draw(key(seed, plan, column, stream) + row * INC)
 * (wyrand's output function over a Weyl sequence), so any worker can
 * produce any row range and the generated set is the same for every chunking
 * and worker count. Booleans use the same seeded draws (Feldera's uniform
 * booleans do not). NULL decisions use a second, independent stream per
 * column; multi-draw values (strings, large zipf) seed a small per-row
 * generator from the row's draw.
 *
 * Strategies (per column, "strategy"; default increment). Ranges are
 * half-open [a, b); "generation units" are the column's numeric value, days
 * for DATE and milliseconds for TIME and TIMESTAMP.
 *   increment  a + (idx*scale) mod (b - a) (Euclidean mod: a negative scale
 *              counts down and stays in range). Without a range: [0, MAX)
 *              where MAX is the type's largest value (as Feldera's
 *              (idx*scale) % MAX). DECIMAL steps 1.0 per idx*scale; DATE one
 *              day, TIME/TIMESTAMP one millisecond. BOOLEAN: idx % 2 == 1.
 *              Strings: the decimal text of idx*scale (range ignored).
 *              With values: values[idx % len] (scale ignored).
 *   uniform    a value uniform in [a, b), then multiplied by scale (Feldera's
 *              quirk, for TIMESTAMP too: the absolute ms value is scaled).
 *              Without a range: [MIN, MAX) of the type. BOOLEAN: fair coin.
 *              Strings: random alphanumerics, length uniform in the range
 *              (default [0, 25)). With values: a uniformly chosen element.
 *   zipf       a + rank - 1 where rank in 1..n has probability ~ 1/rank^e,
 *              n = b - a (whole units for DECIMAL), e default 1; without a
 *              range [0, MAX) as for increment. scale is ignored. Strings
 *              without values: alphanumerics of length a + rank - 1 (default
 *              range [0, 25)). With values: values[rank - 1]. n up to 2^20
 *              uses a Walker alias table built once (O(1) per row); larger n
 *              uses rejection-inversion (Hoermann & Derflinger 1996).
 *   (a DECIMAL wider than 18 digits is generated as DECIMAL(18, min(s, 6)),
 *   MAX and ranges included, then widened to its own scale exactly)
 *   word       one lorem-ipsum word.
 *   words      "range" words (count, default [1, 5)) joined by spaces.
 *   sentence   "range" words (default [4, 12)), capitalized, ending in '.'.
 *   name       "First Last".
 *   email      "first.last@example.com" (example.com/.org/.net).
 * The word strategies apply to CHAR/VARCHAR only; their range (when used)
 * is a word count. Generated strings are cut to VARCHAR(n)/CHAR(n) length
 * and CHAR(n) is padded with spaces. What a configuration may say, its
 * defaults and its checks: datagen_config.c.
 */
#include <math.h>
#include <stdio.h>

#include "../base/mem.h"
#include "datagen_int.h"

#define WY_INC 0xA0761D6478BD642FULL
#define WY_XOR 0xE7037ED1A0B428DBULL
#define GAMMA2 0xD1B54A32D192ED03ULL
#define ZIPF_TABLE_MAX (1u << 20)
#define BLOCK 512

typedef uint64_t v2u64 __attribute__((vector_size(16)));

/* ------------------------------------------------------------ random draws */

static inline uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* The draw of counter s: wyrand's output function (one 64x64->128 multiply). */
static inline uint64_t draw(uint64_t s)
{
    u128 t = (u128)s * (s ^ WY_XOR);
    return (uint64_t)(t >> 64) ^ (uint64_t)t;
}

static inline uint64_t mulhi(uint64_t a, uint64_t b) { return (uint64_t)(((u128)a * b) >> 64); }

static inline double unit01(uint64_t u) { return (double)(u >> 11) * 0x1.0p-53; }

/* Key of the draw stream (plan p, column c, stream s) for seed. */
static uint64_t stream_key(uint64_t seed, int p, int c, int s)
{
    uint64_t k = mix64(seed ^ 0x5EED5EED5EED5EEDULL);
    k ^= mix64(((uint64_t)(uint32_t)p << 32) ^ ((uint64_t)(uint32_t)c << 4) ^ (uint64_t)s ^ GAMMA2);
    return mix64(k);
}

/* Per-row generator for values needing several draws. */
static inline uint64_t row_next(uint64_t *st)
{
    *st += GAMMA2;
    return mix64(*st);
}

/* ------------------------------------------------------------------ zipf */

static double zh(double e, double x) { return exp(-e * log(x)); }
static double helper1(double x) { return fabs(x) > 1e-8 ? log1p(x) / x : 1 - x * (0.5 - x * (1.0 / 3 - 0.25 * x)); }
static double helper2(double x) { return fabs(x) > 1e-8 ? expm1(x) / x : 1 + x * 0.5 * (1 + x / 3 * (1 + 0.25 * x)); }
static double zH(double e, double x)
{
    double lx = log(x);
    return helper2((1 - e) * lx) * lx;
}
static double zHinv(double e, double x)
{
    double t = x * (1 - e);
    if (t < -1)
        t = -1;
    return exp(helper1(t) * x);
}

static void zipf_init(Zipf *z, uint64_t n, double e, Arena *a)
{
    z->n = n;
    z->e = e;
    z->tab = NULL;
    if (n <= ZIPF_TABLE_MAX) {
        /* Walker/Vose alias table over weights 1/k^e */
        double *p = sl_malloc(n * sizeof(double));
        uint32_t *small = sl_malloc(n * sizeof(uint32_t));
        uint32_t *large = sl_malloc(n * sizeof(uint32_t));
        double sum = 0;
        for (uint64_t k = 0; k < n; k++) {
            p[k] = e == 0 ? 1.0 : zh(e, (double)(k + 1));
            sum += p[k];
        }
        uint32_t ns = 0, nl = 0;
        for (uint64_t k = 0; k < n; k++) {
            p[k] = p[k] * (double)n / sum;
            if (p[k] < 1)
                small[ns++] = (uint32_t)k;
            else
                large[nl++] = (uint32_t)k;
        }
        z->tab = arena_alloc(a, n * sizeof(AliasEnt));
        while (ns > 0 && nl > 0) {
            uint32_t s = small[--ns], l = large[nl - 1];
            z->tab[s].thr = (uint64_t)ldexp(p[s], 64);
            z->tab[s].alias = l;
            p[l] = (p[l] + p[s]) - 1;
            if (p[l] < 1) {
                nl--;
                small[ns++] = l;
            }
        }
        while (nl > 0) {
            uint32_t l = large[--nl];
            z->tab[l].thr = UINT64_MAX;
            z->tab[l].alias = l;
        }
        while (ns > 0) { /* rounding leftovers: probability ~1 */
            uint32_t s = small[--ns];
            z->tab[s].thr = UINT64_MAX;
            z->tab[s].alias = s;
        }
        sl_free(p);
        sl_free(small);
        sl_free(large);
        return;
    }
    z->hx1 = zH(e, 1.5) - 1;
    z->hn = zH(e, (double)n + 0.5);
    z->s = 2 - zHinv(e, zH(e, 2.5) - zh(e, 2));
}

/* rank - 1 for draw u of a row (u seeds more draws when needed). */
static inline uint64_t zipf_rank0(const Zipf *z, uint64_t u)
{
    if (z->tab) {
        u128 m = (u128)u * z->n;
        uint64_t k = (uint64_t)(m >> 64);
        return (uint64_t)m < z->tab[k].thr ? k : z->tab[k].alias;
    }
    if (z->e == 0)
        return mulhi(u, z->n);
    uint64_t st = u;
    double nd = (double)z->n;
    for (;;) {
        double uu = z->hn + unit01(row_next(&st)) * (z->hx1 - z->hn);
        double x = zHinv(z->e, uu);
        double kd = floor(x + 0.5);
        if (kd < 1)
            kd = 1;
        else if (kd > nd)
            kd = nd;
        if (kd - x <= z->s || uu >= zH(z->e, kd + 0.5) - zh(z->e, kd)) {
            uint64_t k = (uint64_t)kd;
            return (k > z->n ? z->n : k) - 1;
        }
    }
}

/* ------------------------------------------------------------ fill loops */

/* Runs of rows between wraps of the range are arithmetic progressions. */
static void fill_i64_incr(const Field *f, int64_t start, int64_t cnt, int64_t *out)
{
    uint64_t n = f->n, step = f->incr, nm = n - step;
    uint64_t v = (uint64_t)(((u128)((uint64_t)start % n) * step) % n);
    uint64_t a = (uint64_t)f->a, unit = (uint64_t)f->unit, d = step * unit;
    uint64_t left = (uint64_t)cnt;
    while (left > 0) {
        uint64_t run = step ? (n - 1 - v) / step + 1 : left; /* rows before v passes n */
        if (run > left)
            run = left;
        uint64_t x = (a + v) * unit, j = 0;
        if (run >= 2) { /* two rows per 16-byte store */
            v2u64 xv = {x, x + d}, dv = {2 * d, 2 * d};
            for (; j + 2 <= run; j += 2, xv += dv)
                memcpy(out + j, &xv, sizeof(xv));
            x += j * d;
        }
        for (; j < run; j++, x += d)
            out[j] = (int64_t)x;
        out += run;
        left -= run;
        v += (run - 1) * step; /* the run's last value, < n */
        v = v >= nm ? v - nm : v + step;
    }
}

static void fill_i64_uniform(const Field *f, int64_t start, int64_t cnt, int64_t *out)
{
    uint64_t ctr = f->key + (uint64_t)start * WY_INC;
    uint64_t a = (uint64_t)f->a, n = f->n, mult = (uint64_t)f->mult;
    for (int64_t i = 0; i < cnt; i++) {
        uint64_t u = draw(ctr);
        ctr += WY_INC;
        out[i] = (int64_t)((a + mulhi(u, n)) * mult);
    }
}

static void fill_i64_uniform1(const Field *f, int64_t start, int64_t cnt, int64_t *out)
{
    uint64_t ctr = f->key + (uint64_t)start * WY_INC;
    uint64_t a = (uint64_t)f->a, n = f->n;
    for (int64_t i = 0; i < cnt; i++) {
        uint64_t u = draw(ctr);
        ctr += WY_INC;
        out[i] = (int64_t)(a + mulhi(u, n));
    }
}

static void fill_i64_zipf(const Field *f, int64_t start, int64_t cnt, int64_t *out)
{
    uint64_t ctr = f->key + (uint64_t)start * WY_INC;
    uint64_t a = (uint64_t)f->a, step = (uint64_t)f->step, unit = (uint64_t)f->unit;
    if (f->z.tab) {
        const AliasEnt *tab = f->z.tab;
        uint64_t n = f->z.n, au = a * unit, su = step * unit;
        for (int64_t i = 0; i < cnt; i++) {
            uint64_t u = draw(ctr);
            ctr += WY_INC;
            u128 m = (u128)u * n;
            uint64_t k = (uint64_t)(m >> 64);
            /* branch-free choice: the comparison is unpredictable */
            uint64_t keep = 0 - (uint64_t)((uint64_t)m < tab[k].thr);
            uint64_t r = (k & keep) | (tab[k].alias & ~keep);
            out[i] = (int64_t)(au + r * su);
        }
        return;
    }
    for (int64_t i = 0; i < cnt; i++) {
        uint64_t u = draw(ctr);
        ctr += WY_INC;
        out[i] = (int64_t)((a + zipf_rank0(&f->z, u) * step) * unit);
    }
}

static void fill_f64(const Field *f, int64_t start, int64_t cnt, double *out)
{
    uint64_t ctr = f->key + (uint64_t)start * WY_INC;
    switch (f->g) {
    case G_F64_INCR:
        for (int64_t i = 0; i < cnt; i++) {
            double r = fmod((double)(start + i) * f->fscale, f->span);
            if (r < 0)
                r += f->span;
            if (r >= f->span)
                r = 0;
            out[i] = as_real(f->fa + r, f->real);
        }
        break;
    case G_F64_UNIFORM: {
        double half = f->span; /* half the range width (see setup) */
        for (int64_t i = 0; i < cnt; i++) {
            double x = unit01(draw(ctr)) * half;
            double v = (f->fa + x) + x;
            ctr += WY_INC;
            v = v < f->fbelow ? v : f->fbelow;
            out[i] = as_real(v * f->fscale, f->real);
        }
        break;
    }
    case G_F64_ZIPF:
        for (int64_t i = 0; i < cnt; i++) {
            uint64_t u = draw(ctr);
            ctr += WY_INC;
            out[i] = as_real(f->fa + (double)zipf_rank0(&f->z, u), f->real);
        }
        break;
    default:
        sl_panic("datagen: bad f64 generator %d", (int)f->g);
    }
}

/* Indexes into values for rows [start, start+cnt), cnt <= BLOCK. */
static void values_index(const Field *f, int64_t start, int64_t cnt, uint32_t *idx)
{
    uint64_t ctr = f->key + (uint64_t)start * WY_INC;
    uint32_t n = f->v.n;
    switch (f->st) {
    case ST_INCREMENT: {
        uint32_t k = (uint32_t)((uint64_t)start % n);
        for (int64_t i = 0; i < cnt; i++) {
            idx[i] = k;
            k = k + 1 == n ? 0 : k + 1;
        }
        break;
    }
    case ST_UNIFORM:
        for (int64_t i = 0; i < cnt; i++, ctr += WY_INC)
            idx[i] = (uint32_t)mulhi(draw(ctr), n);
        break;
    default:
        for (int64_t i = 0; i < cnt; i++, ctr += WY_INC)
            idx[i] = (uint32_t)zipf_rank0(&f->z, draw(ctr));
        break;
    }
}

/* Packs generated strings into arena blocks. */
typedef struct StrOut {
    Arena *a;
    char *p;
    size_t left;
    int64_t rows_left;
} StrOut;

static char *so_reserve(StrOut *o, size_t need)
{
    if (!o->p || need > o->left) {
        size_t sz = (size_t)SL_MIN(o->rows_left, 4096) * 24;
        if (sz < 256)
            sz = 256;
        if (sz < need)
            sz = need;
        o->p = arena_alloc(o->a, sz);
        o->left = sz;
    }
    return o->p;
}

/* Commit n bytes written at o->p as a value of type t (cut to length,
   CHAR padded; the reservation must cover the padded length). */
static Str so_commit(StrOut *o, size_t n, SqlType t)
{
    if (t.len >= 0) {
        if (n > (size_t)t.len)
            n = (size_t)t.len;
        if (t.kind == TK_CHAR && n < (size_t)t.len) {
            memset(o->p + n, ' ', (size_t)t.len - n);
            n = (size_t)t.len;
        }
    }
    Str s = {o->p, (uint32_t)n};
    o->p += n;
    o->left -= n;
    o->rows_left--;
    return s;
}

static size_t so_pad(SqlType t) { return t.kind == TK_CHAR && t.len > 0 ? (size_t)t.len : 0; }

static const char alnum[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

static size_t put_i128(char *p, i128 v)
{
    char tmp[48];
    size_t k = 0, n = 0;
    u128 m = v < 0 ? (u128)0 - (u128)v : (u128)v;
    do {
        tmp[k++] = (char)('0' + (int)(m % 10));
        m /= 10;
    } while (m);
    if (v < 0)
        p[n++] = '-';
    while (k)
        p[n++] = tmp[--k];
    return n;
}

static size_t put_lower(char *p, Str w)
{
    for (uint32_t k = 0; k < w.n; k++) {
        char c = w.p[k];
        p[k] = (c >= 'A' && c <= 'Z') ? (char)(c + 32) : c;
    }
    return w.n;
}

static inline Str pick(const WordList *wl, uint64_t u) { return wl->w[mulhi(u, wl->n)]; }

/*
 * One string per call, written at o->p (reserving room for CHAR padding);
 * returns its length. idx: row index, u: the row's draw.
 */
static inline size_t gen_incr(const Field *f, int64_t idx, uint64_t u, StrOut *o, size_t pad)
{
    char *p = so_reserve(o, SL_MAX((size_t)48, pad));
    return put_i128(p, (i128)idx * f->scale);
}

static inline size_t put_alnum(uint64_t len, uint64_t st, StrOut *o, size_t pad)
{
    char *p = so_reserve(o, SL_MAX((size_t)len, pad));
    for (uint64_t k = 0; k < len; k++)
        p[k] = alnum[mulhi(row_next(&st), 62)];
    return (size_t)len;
}

static inline size_t gen_alnum_uniform(const Field *f, int64_t idx, uint64_t u, StrOut *o,
                                       size_t pad)
{
    return put_alnum((uint64_t)f->lo + mulhi(u, f->n), u, o, pad);
}

static inline size_t gen_alnum_zipf(const Field *f, int64_t idx, uint64_t u, StrOut *o,
                                    size_t pad)
{
    return put_alnum((uint64_t)f->lo + zipf_rank0(&f->z, u), u, o, pad);
}

static inline size_t gen_words(const Field *f, int64_t idx, uint64_t u, StrOut *o, size_t pad)
{
    uint64_t words = f->st == ST_WORD ? 1 : (uint64_t)f->lo + mulhi(u, f->n), st = u;
    char *p = so_reserve(o, SL_MAX((size_t)words * (f->wmax + 1) + 1, pad));
    size_t n = 0;
    for (uint64_t k = 0; k < words; k++) {
        Str w = pick(f->wl, row_next(&st));
        if (k)
            p[n++] = ' ';
        memcpy(p + n, w.p, w.n);
        n += w.n;
    }
    if (f->st == ST_SENTENCE && n > 0) {
        if (p[0] >= 'a' && p[0] <= 'z')
            p[0] = (char)(p[0] - 32);
        p[n++] = '.';
    }
    return n;
}

static inline size_t gen_name(const Field *f, int64_t idx, uint64_t u, StrOut *o, size_t pad)
{
    uint64_t st = u;
    Str fn = pick(&words_first, row_next(&st)), ln = pick(&words_last, row_next(&st));
    char *p = so_reserve(o, SL_MAX((size_t)fn.n + ln.n + 1, pad));
    memcpy(p, fn.p, fn.n);
    p[fn.n] = ' ';
    memcpy(p + fn.n + 1, ln.p, ln.n);
    return (size_t)fn.n + 1 + ln.n;
}

static inline size_t gen_email(const Field *f, int64_t idx, uint64_t u, StrOut *o, size_t pad)
{
    uint64_t st = u;
    Str fn = pick(&words_first, row_next(&st)), ln = pick(&words_last, row_next(&st));
    Str dm = pick(&words_domain, row_next(&st));
    char *p = so_reserve(o, SL_MAX((size_t)fn.n + ln.n + dm.n + 2, pad));
    size_t n = put_lower(p, fn);
    p[n++] = '.';
    n += put_lower(p + n, ln);
    p[n++] = '@';
    memcpy(p + n, dm.p, dm.n);
    return n + dm.n;
}

static void fill_str(const Field *f, int64_t start, int64_t cnt, Str *out, Arena *a)
{
    StrOut o = {a, NULL, 0, cnt};
    uint64_t ctr = f->key + (uint64_t)start * WY_INC;
    size_t pad = so_pad(f->t);
#define FILL_STR(gen)                                                                             \
    for (int64_t i = 0; i < cnt; i++, ctr += WY_INC)                                              \
        out[i] = so_commit(&o, gen(f, start + i, draw(ctr), &o, pad), f->t);                      \
    break
    switch (f->g) {
    case G_STR_INCR: FILL_STR(gen_incr);
    case G_STR_ALNUM: FILL_STR(gen_alnum_uniform);
    case G_STR_ZIPF: FILL_STR(gen_alnum_zipf);
    case G_STR_WORDS: FILL_STR(gen_words);
    case G_STR_NAME: FILL_STR(gen_name);
    case G_STR_EMAIL: FILL_STR(gen_email);
    default: sl_panic("datagen: bad string generator %d", (int)f->g);
    }
#undef FILL_STR
}

static void fill_values(const Field *f, int64_t start, int64_t cnt, Vec *v, int64_t base, Arena *a)
{
    uint32_t idx[BLOCK];
    StrOut o = {a, NULL, 0, cnt};
    for (int64_t b = 0; b < cnt; b += BLOCK) {
        int64_t m = SL_MIN((int64_t)BLOCK, cnt - b);
        values_index(f, start + b, m, idx);
        int64_t at = base + b;
        if (v->i) {
            for (int64_t i = 0; i < m; i++)
                v->i[at + i] = f->v.i[idx[i]];
        } else if (v->f) {
            for (int64_t i = 0; i < m; i++)
                v->f[at + i] = f->v.f[idx[i]];
        } else {
            for (int64_t i = 0; i < m; i++) {
                Str s = f->v.s[idx[i]];
                char *p = so_reserve(&o, s.n);
                memcpy(p, s.p, s.n);
                v->s[at + i] = (Str){p, s.n};
                o.p += s.n;
                o.left -= s.n;
                o.rows_left--;
            }
        }
        if (v->nul && f->v.nul)
            for (int64_t i = 0; i < m; i++)
                v->nul[at + i] = f->v.nul[idx[i]];
    }
}

static void fill_nulls(const Field *f, int64_t start, int64_t cnt, uint8_t *nul)
{
    if (!(f->g == G_VALUES && f->v.nul))
        memset(nul, 0, (size_t)cnt);
    if (f->all_null) {
        memset(nul, 1, (size_t)cnt);
    } else if (f->nthr) {
        uint64_t ctr = f->nkey + (uint64_t)start * WY_INC, thr = f->nthr;
        for (int64_t i = 0; i < cnt; i++, ctr += WY_INC)
            nul[i] |= (uint8_t)(draw(ctr) < thr);
    }
}

void datagen_fill(const Datagen *g, int p, int64_t start, int64_t count, Chunk *out, Arena *a)
{
    const Plan *pl = &g->plans[p];
    int64_t base = out->n;
    if (count <= 0)
        return;
    if (g->nx) {
        nexmark_fill(g->nx, start, count, out, a);
        return;
    }
    if (base + count > out->cap)
        sl_panic("datagen_fill: %lld rows do not fit chunk (%lld of %lld used)",
                 (long long)count, (long long)base, (long long)out->cap);
    for (int c = 0; c < g->ncols; c++) {
        const Field *f = &pl->f[c];
        Vec *v = &out->col[c], narrow;
        if (v->x) { /* a wide DECIMAL: generated as DECIMAL(18,s), widened below */
            narrow = *v;
            narrow.x = NULL;
            narrow.i = arena_alloc(a, sizeof(int64_t) * (size_t)(base + count));
            v = &narrow;
        }
        switch (f->g) {
        case G_I64_INCR: fill_i64_incr(f, start, count, v->i + base); break;
        case G_I64_UNIFORM:
            if (f->mult == 1)
                fill_i64_uniform1(f, start, count, v->i + base);
            else
                fill_i64_uniform(f, start, count, v->i + base);
            break;
        case G_I64_ZIPF: fill_i64_zipf(f, start, count, v->i + base); break;
        case G_F64_INCR:
        case G_F64_UNIFORM:
        case G_F64_ZIPF: fill_f64(f, start, count, v->f + base); break;
        case G_VALUES: fill_values(f, start, count, v, base, a); break;
        default: fill_str(f, start, count, v->s + base, a); break;
        }
        if (v->nul)
            fill_nulls(f, start, count, v->nul + base);
        if (v == &narrow) {
            i128 up = pow10_i128(out->col[c].t.scale - f->t.scale);
            for (int64_t i = base; i < base + count; i++)
                out->col[c].x[i] = (i128)v->i[i] * up;
        }
    }
    int64_t *w = out->w + base, i = 0;
    v2u64 ones = {1, 1};
    for (; i + 2 <= count; i += 2)
        memcpy(w + i, &ones, sizeof(ones));
    for (; i < count; i++)
        w[i] = 1;
    out->n += count;
}

/* ------------------------------------------------------------- accessors */

int datagen_nplans(const Datagen *g) { return g->nplans; }
int64_t datagen_plan_limit(const Datagen *g, int p) { return g->plans[p].limit; }
double datagen_plan_rate(const Datagen *g, int p) { return g->plans[p].rate; }
int64_t datagen_plan_chunk(const Datagen *g, int p) { return g->plans[p].chunk; }
int datagen_workers(const Datagen *g) { return g->workers; }
uint64_t datagen_seed(const Datagen *g) { return g->seed; }

void datagen_free(Datagen *g)
{
    if (!g)
        return;
    nexmark_free(g->nx);
    arena_free(g->arena);
}
/* ------------------------------------------------------------------ setup */

/* What generation needs beyond the config: each column's draw streams,
   zipf tables, the word list and its longest word. */
static void prepare(Datagen *g)
{
    for (int p = 0; p < g->nplans; p++) {
        for (int c = 0; c < g->ncols; c++) {
            Field *f = &g->plans[p].f[c];
            f->key = stream_key(g->seed, p, c, 0);
            f->nkey = stream_key(g->seed, p, c, 1);
            if (f->z.n)
                zipf_init(&f->z, f->z.n, f->z.e, g->arena);
            if (f->g == G_STR_WORDS) {
                f->wl = &words_lorem;
                for (uint32_t w = 0; w < f->wl->n; w++)
                    f->wmax = SL_MAX(f->wmax, (size_t)f->wl->w[w].n);
            }
        }
    }
}

Datagen *datagen_new(const cJSON *config, int ncols, const char *const *names,
                     const SqlType *types, const char *where, Err *err)
{
    Arena *a = arena_new(0);
    Datagen *g = arena_zalloc(a, sizeof(*g));
    g->arena = a;
    if (datagen_config_parse(g, config, ncols, names, types, where, err)) {
        arena_free(a);
        return NULL;
    }
    prepare(g);
    return g;
}
