/*
 * io/datagen.c - the datagen input transport: Feldera's datagen connector
 * config, validated once, then rows generated straight into Chunks.
 *
 * In: the connector's transport "config" JSON and the table's columns
 * (datagen_new). Out: rows [start, start+count) of a plan, appended to a
 * Chunk a column at a time (datagen_fill). A transport thread or worker asks
 * for row ranges; datagen keeps no state between calls.
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
 *   word       one lorem-ipsum word.
 *   words      "range" words (count, default [1, 5)) joined by spaces.
 *   sentence   "range" words (default [4, 12)), capitalized, ending in '.'.
 *   name       "First Last".
 *   email      "first.last@example.com" (example.com/.org/.net).
 * The word strategies apply to CHAR/VARCHAR only; their range (when used)
 * is a word count. Generated strings are cut to VARCHAR(n)/CHAR(n) length
 * and CHAR(n) is padded with spaces. Values are parsed per column type:
 * JSON numbers (generation units for temporal types) or strings in text.h
 * syntax (TIMESTAMP strings may be RFC 3339 with Z or a +hh:mm offset);
 * null for nullable columns only.
 * Defaults by type: TIMESTAMP [0, 4102444800000) ms (1970..2100), DATE
 * [0, 54787) days, TIME [0, 86400000) ms for every strategy; DECIMAL(p,s)
 * MAX is 10^p - 1 scaled units; REAL/DOUBLE uniform [-MAX, MAX). scale is
 * an integer, except for REAL/DOUBLE; range and scale are checked so that
 * every generated value fits the column type. BOOLEAN takes no range.
 * Strings: range is a length (uniform, zipf) or a word count (words,
 * sentence) and must be non-negative integers; increment, word, name and
 * email ignore it (as Feldera does).
 *
 * null_percentage p (0..100, may be fractional): a row's value is NULL with
 * probability p/100, as Feldera's draw u in [1,100] <= p. Only nullable
 * columns may have p > 0.
 *
 * Top level and plans: seed (u64, default 0 for reproducibility; Feldera
 * picks a random seed; a string of digits keeps seeds above 2^53 exact),
 * workers (>= 1, default 1), plan (default [{}]: one unlimited plan). Plan:
 * limit (>= 0; absent = unlimited), rate (> 0 rows/s), worker_chunk_size
 * (>= 1; default min(rate, 10000), 10000 without rate), fields. Unknown or
 * duplicate keys at any level are errors naming the key and the connector;
 * transaction_size and nested struct settings are not supported.
 */
#include "datagen.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "../base/mem.h"
#include "../expr/text.h"
#include "words.h"

#define WY_INC 0xA0761D6478BD642FULL
#define WY_XOR 0xE7037ED1A0B428DBULL
#define GAMMA2 0xD1B54A32D192ED03ULL
#define ZIPF_TABLE_MAX (1u << 20)
#define DEFAULT_CHUNK 10000
#define BLOCK 512

typedef __int128 i128;
typedef unsigned __int128 u128;
typedef uint64_t v2u64 __attribute__((vector_size(16)));

typedef enum Strategy {
    ST_INCREMENT,
    ST_UNIFORM,
    ST_ZIPF,
    ST_WORD,
    ST_WORDS,
    ST_SENTENCE,
    ST_NAME,
    ST_EMAIL,
} Strategy;

static const char *const strategy_names[] = {"increment", "uniform", "zipf", "word",
                                             "words",     "sentence", "name", "email"};

/* Fill loop of a column, chosen once in datagen_new. */
typedef enum GenKind {
    G_I64_INCR,    /* (a + (idx*incr mod n)) * unit */
    G_I64_UNIFORM, /* (a + draw mod n) * mult */
    G_I64_ZIPF,    /* (a + (rank-1) * step) * unit */
    G_F64_INCR,    /* fa + (idx*fscale mod span) */
    G_F64_UNIFORM, /* (fa + draw * span) * fscale */
    G_F64_ZIPF,    /* fa + rank - 1 */
    G_VALUES,      /* values[index], index by st */
    G_STR_INCR,    /* text of idx*scale */
    G_STR_ALNUM,   /* alphanumerics, length uniform in the range */
    G_STR_ZIPF,    /* alphanumerics, length lo + rank - 1 */
    G_STR_WORDS,   /* word, words, sentence */
    G_STR_NAME,
    G_STR_EMAIL,
} GenKind;

typedef struct AliasEnt {
    uint64_t thr;   /* keep the bucket when the draw's fraction is below */
    uint64_t alias; /* else this index */
} AliasEnt;

typedef struct Zipf {
    uint64_t n;    /* ranks 1..n */
    double e;      /* exponent */
    AliasEnt *tab; /* n entries when n <= ZIPF_TABLE_MAX, else NULL */
    double hx1, hn, s; /* rejection-inversion constants */
} Zipf;

typedef struct Values {
    uint32_t n;
    int64_t *i;   /* PHYS_I64 elements */
    double *f;    /* PHYS_F64 elements */
    Str *s;       /* PHYS_STR elements (in the generator's arena) */
    uint8_t *nul; /* per element NULL flags, NULL when none is null */
} Values;

typedef struct Field {
    GenKind g;
    Strategy st;
    SqlType t;
    uint64_t key;   /* value draws */
    uint64_t nkey;  /* NULL draws */
    uint64_t nthr;  /* NULL when draw < nthr */
    bool all_null;  /* null_percentage 100 */
    /* PHYS_I64 */
    int64_t a;      /* lower bound, generation units */
    uint64_t n;     /* values in the range (>= 1) */
    uint64_t incr;  /* increment step mod n */
    int64_t unit;   /* generation unit -> physical (1000 for ms -> us) */
    int64_t mult;   /* uniform: scale * unit */
    int64_t step;   /* zipf: physical step per rank (10^s for DECIMAL) */
    /* PHYS_F64 */
    double fa, span, fscale, fbelow; /* fbelow: largest double below b */
    bool real;
    /* PHYS_STR */
    int64_t scale;  /* increment */
    int64_t lo;     /* length / word count range [lo, lo + n) */
    const WordList *wl;
    size_t wmax;    /* longest word in wl */
    Zipf z;
    Values v;
} Field;

typedef struct Plan {
    int64_t limit; /* -1 = unlimited */
    double rate;   /* 0 = unlimited */
    int64_t chunk;
    Field *f;      /* one per column */
} Plan;

struct Datagen {
    Arena *arena; /* owns everything below, including this struct */
    uint64_t seed;
    int workers;
    int nplans;
    Plan *plans;
    int ncols;
};

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

static inline double as_real(double v, bool real) { return real ? (double)(float)v : v; }

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
    if (base + count > out->cap)
        sl_panic("datagen_fill: %lld rows do not fit chunk (%lld of %lld used)",
                 (long long)count, (long long)base, (long long)out->cap);
    for (int c = 0; c < g->ncols; c++) {
        const Field *f = &pl->f[c];
        Vec *v = &out->col[c];
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
    if (g)
        arena_free(g->arena);
}

/* ----------------------------------------------------------------- config */

/* Error "<message> in <ctx>". */
__attribute__((format(printf, 3, 4)))
static int cfg_err(Err *err, const char *ctx, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return err_set(err, SL_ECONFIG, "%s in %s", msg, ctx);
}

/* JSON text of item for messages (cut to fit). */
static const char *jtext(const cJSON *item, char *buf, size_t size)
{
    char *s = cJSON_PrintUnformatted(item);
    if (!s) {
        snprintf(buf, size, "?");
        return buf;
    }
    if (strlen(s) > 60)
        snprintf(buf, size, "%.57s...", s);
    else
        snprintf(buf, size, "%s", s);
    cJSON_free(s);
    return buf;
}

/* 0 when every member of obj is in keys[] and none repeats. */
static int check_keys(const cJSON *obj, const char *const *keys, size_t nkeys, const char *ctx,
                      Err *err)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, obj)
    {
        bool known = false;
        for (size_t k = 0; k < nkeys && !known; k++)
            known = strcmp(it->string, keys[k]) == 0;
        if (!known) {
            if (strcmp(it->string, "transaction_size") == 0)
                return cfg_err(err, ctx, "unsupported key \"%s\"", it->string);
            return cfg_err(err, ctx, "unknown key \"%s\"", it->string);
        }
        for (const cJSON *o = obj->child; o != it; o = o->next)
            if (strcmp(o->string, it->string) == 0)
                return cfg_err(err, ctx, "duplicate key \"%s\"", it->string);
    }
    return 0;
}

static bool is_integral(double v) { return isfinite(v) && v == floor(v); }

/* Integer-valued number in [lo, hi] (as doubles). */
static int get_int(const cJSON *it, const char *key, double lo, double hi, const char *what,
                   int64_t *out, const char *ctx, Err *err)
{
    char jb[80];
    if (!cJSON_IsNumber(it) || !is_integral(it->valuedouble) || it->valuedouble < lo ||
        it->valuedouble > hi)
        return cfg_err(err, ctx, "\"%s\" must be %s, got %s", key, what, jtext(it, jb, sizeof(jb)));
    *out = (int64_t)it->valuedouble;
    return 0;
}

static int parse_seed(const cJSON *it, uint64_t *out, const char *ctx, Err *err)
{
    char jb[80];
    if (cJSON_IsNumber(it) && is_integral(it->valuedouble) && it->valuedouble >= 0 &&
        it->valuedouble < 18446744073709551616.0) {
        *out = (uint64_t)it->valuedouble;
        return 0;
    }
    if (cJSON_IsString(it)) {
        const char *s = it->valuestring;
        char *end;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (s[0] >= '0' && s[0] <= '9' && *end == 0 && errno == 0) {
            *out = v;
            return 0;
        }
    }
    return cfg_err(err, ctx, "\"seed\" must be an integer in [0, 2^64), got %s",
                   jtext(it, jb, sizeof(jb)));
}

/* Physical value domain of a PHYS_I64 type. */
static void domain(SqlType t, i128 *lo, i128 *hi)
{
    int p = t.prec ? t.prec : DECIMAL_MAX_PREC;
    switch ((TypeKind)t.kind) {
    case TK_BOOL: *lo = 0; *hi = 1; break;
    case TK_DECIMAL: *hi = pow10_i64(p) - 1; *lo = -*hi; break;
    case TK_DATE: *lo = -719162; *hi = 2932896; break; /* 0001-01-01 .. 9999-12-31 */
    case TK_TIME: *lo = 0; *hi = 86400000000LL - 1; break;
    case TK_TIMESTAMP: *lo = -62135596800000000LL; *hi = 253402300800000000LL - 1; break;
    default: {
        int64_t l, h;
        type_int_range((TypeKind)t.kind, &l, &h);
        *lo = l;
        *hi = h;
    }
    }
}

/* Generation unit -> physical value factor. */
static int64_t gen_unit(SqlType t)
{
    return (t.kind == TK_TIME || t.kind == TK_TIMESTAMP) ? 1000 : 1;
}

/* Shortest text that reads back as v. */
static void dbl_text(double v, char *buf, size_t size)
{
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, size, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            return;
    }
}

/* TIMESTAMP text, RFC 3339 style zones allowed (Z, +hh:mm, -hh:mm). */
static int parse_ts_text(SqlType t, const char *s, int64_t *us, Err *err)
{
    size_t n = strlen(s);
    int64_t off = 0;
    if (n > 0 && (s[n - 1] == 'Z' || s[n - 1] == 'z')) {
        n--;
    } else if (n > 16 && (s[n - 6] == '+' || s[n - 6] == '-') && s[n - 3] == ':') {
        int hh, mm;
        if (sscanf(s + n - 5, "%2d:%2d", &hh, &mm) == 2) {
            off = (hh * 60 + mm) * 60 * 1000000LL;
            if (s[n - 6] == '-')
                off = -off;
            n -= 6;
        }
    }
    double dummy_f;
    Str dummy_s;
    if (text_parse(t, s, n, NULL, us, &dummy_f, &dummy_s, err))
        return SL_EDATA;
    *us -= off;
    return 0;
}

/*
 * One value of column type t from JSON (range bound or values element):
 * PHYS_I64 in generation units when gen_units (DECIMAL scaled), else
 * physical units; PHYS_F64 into *f; strings into *s (arena a). Integers
 * and DECIMALs are read wider than the column (an exclusive upper bound may
 * be MAX + 1); callers check the column's domain. 0, or -1 with *why set.
 */
static int json_value(SqlType t, const cJSON *it, bool gen_units, Arena *a, i128 *iv, double *f,
                      Str *s, char *why, size_t whysize)
{
    Err e = {0};
    TypeKind k = (TypeKind)t.kind;
    Phys ph = type_phys(k);
    int64_t unit = gen_units ? 1 : gen_unit(t);
    if (cJSON_IsBool(it)) {
        if (k != TK_BOOL) {
            snprintf(why, whysize, "expected a number or a string, not a boolean");
            return -1;
        }
        *iv = cJSON_IsTrue(it) ? 1 : 0;
        return 0;
    }
    if (cJSON_IsNumber(it)) {
        double d = it->valuedouble;
        if (ph == PHYS_F64) {
            *f = d;
            return 0;
        }
        if (ph == PHYS_STR || k == TK_BOOL) {
            snprintf(why, whysize, k == TK_BOOL ? "expected true, false or a string"
                                                : "expected a string");
            return -1;
        }
        if (k == TK_DECIMAL) {
            char buf[64];
            int64_t v;
            SqlType wide = t;
            wide.prec = DECIMAL_MAX_PREC;
            dbl_text(d, buf, sizeof(buf));
            if (text_parse(wide, buf, strlen(buf), a, &v, f, s, &e)) {
                snprintf(why, whysize, "%.400s", e.msg);
                return -1;
            }
            *iv = v;
            return 0;
        }
        if (!is_integral(d) || fabs(d) > 9.3e18) {
            snprintf(why, whysize, "expected an integer");
            return -1;
        }
        *iv = (i128)d * unit;
        return 0;
    }
    if (cJSON_IsString(it)) {
        const char *str = it->valuestring;
        int64_t v = 0;
        int rc;
        SqlType pt = t;
        if (type_is_integer(k))
            pt.kind = TK_BIGINT;
        if (k == TK_DECIMAL)
            pt.prec = DECIMAL_MAX_PREC;
        if (k == TK_TIMESTAMP)
            rc = parse_ts_text(pt, str, &v, &e);
        else
            rc = text_parse(pt, str, strlen(str), a, &v, f, s, &e);
        if (rc) {
            snprintf(why, whysize, "%.400s", e.msg);
            return -1;
        }
        *iv = v;
        if (gen_units && gen_unit(t) > 1) /* us -> ms, rounding down */
            *iv = (v - (((v % 1000) + 1000) % 1000)) / 1000;
        return 0;
    }
    snprintf(why, whysize, "expected a number or a string");
    return -1;
}

/* Range [a, b) in generation units (i128 for PHYS_I64, double for F64). */
typedef struct Range {
    bool set;
    i128 a, b;
    double fa, fb;
} Range;

static int parse_range(const cJSON *it, SqlType t, bool lengths, Range *r, const char *ctx,
                       Err *err)
{
    char jb[80], why[600];
    if (!cJSON_IsArray(it) || cJSON_GetArraySize(it) != 2)
        return cfg_err(err, ctx, "\"range\" must be an array of two bounds [a, b), got %s",
                       jtext(it, jb, sizeof(jb)));
    const cJSON *ja = cJSON_GetArrayItem(it, 0), *jb2 = cJSON_GetArrayItem(it, 1);
    r->set = true;
    if (lengths) {
        int64_t a = 0, b = 0;
        if (get_int(ja, "range", 0, 1e9, "an array of two non-negative integers", &a, ctx, err) ||
            get_int(jb2, "range", 0, 1e9, "an array of two non-negative integers", &b, ctx, err))
            return SL_ECONFIG;
        r->a = a;
        r->b = b;
    } else {
        Str s;
        for (int k = 0; k < 2; k++) {
            const cJSON *jv = k ? jb2 : ja;
            i128 *iv = k ? &r->b : &r->a;
            double *fv = k ? &r->fb : &r->fa;
            if (json_value(t, jv, true, NULL, iv, fv, &s, why, sizeof(why)))
                return cfg_err(err, ctx, "bad \"range\" bound %s: %s", jtext(jv, jb, sizeof(jb)),
                               why);
            if (type_phys((TypeKind)t.kind) == PHYS_F64 && !isfinite(*fv))
                return cfg_err(err, ctx, "\"range\" bounds must be finite");
        }
    }
    bool empty = type_phys((TypeKind)t.kind) == PHYS_F64 && !lengths ? !(r->fa < r->fb)
                                                                      : !(r->a < r->b);
    if (empty)
        return cfg_err(err, ctx, "empty \"range\" %s: the lower bound must be below the upper",
                       jtext(it, jb, sizeof(jb)));
    return 0;
}

static int parse_values(const cJSON *it, const Field *f, Arena *a, Values *v, const char *col,
                        const char *ctx, Err *err)
{
    char jb[80], why[600];
    if (!cJSON_IsArray(it) || cJSON_GetArraySize(it) < 1)
        return cfg_err(err, ctx, "\"values\" must be a non-empty array, got %s",
                       jtext(it, jb, sizeof(jb)));
    int n = cJSON_GetArraySize(it);
    Phys ph = type_phys((TypeKind)f->t.kind);
    v->n = (uint32_t)n;
    v->i = ph == PHYS_I64 ? arena_zalloc(a, (size_t)n * sizeof(int64_t)) : NULL;
    v->f = ph == PHYS_F64 ? arena_zalloc(a, (size_t)n * sizeof(double)) : NULL;
    v->s = ph == PHYS_STR ? arena_zalloc(a, (size_t)n * sizeof(Str)) : NULL;
    v->nul = NULL;
    int k = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, it)
    {
        if (cJSON_IsNull(e)) {
            if (!f->t.nullable)
                return cfg_err(err, ctx, "\"values\"[%d] is null but column \"%s\" is NOT NULL",
                               k, col);
            if (!v->nul)
                v->nul = arena_zalloc(a, (size_t)n);
            if (v->s)
                v->s[k] = (Str){"", 0};
            v->nul[k++] = 1;
            continue;
        }
        i128 iv = 0;
        double fv = 0;
        Str sv = {"", 0};
        if (json_value(f->t, e, false, a, &iv, &fv, &sv, why, sizeof(why)))
            return cfg_err(err, ctx, "bad \"values\"[%d] %s: %s", k, jtext(e, jb, sizeof(jb)),
                           why);
        if (ph == PHYS_I64) {
            i128 lo, hi;
            domain(f->t, &lo, &hi);
            if (iv < lo || iv > hi) {
                char tn[48];
                return cfg_err(err, ctx, "\"values\"[%d] %s is out of range for %s", k,
                               jtext(e, jb, sizeof(jb)), type_name(f->t, tn, sizeof(tn)));
            }
            v->i[k] = (int64_t)iv;
        } else if (ph == PHYS_F64) {
            if (f->t.kind == TK_REAL && isfinite(fv) && fabs(fv) > FLT_MAX)
                return cfg_err(err, ctx, "\"values\"[%d] %s is out of range for REAL", k,
                               jtext(e, jb, sizeof(jb)));
            v->f[k] = as_real(fv, f->t.kind == TK_REAL);
        } else {
            v->s[k] = sv;
        }
        k++;
    }
    return 0;
}

static int find_strategy(const char *s)
{
    for (size_t k = 0; k < ARRAY_LEN(strategy_names); k++)
        if (strcmp(s, strategy_names[k]) == 0)
            return (int)k;
    return -1;
}

/* Check [lo, hi] * m lies in t's domain (physical units). */
static bool fits(SqlType t, i128 lo, i128 hi, i128 m)
{
    i128 dlo, dhi;
    const i128 lim = (i128)1 << 100;
    domain(t, &dlo, &dhi);
    if (lo < -lim || hi > lim || m < -lim || m > lim)
        return false;
    i128 x = lo * m, y = hi * m;
    if (x > y) {
        i128 tmp = x;
        x = y;
        y = tmp;
    }
    return x >= dlo && y <= dhi;
}

static int setup_i64(Field *f, Range *r, int64_t scale, double e, const cJSON *jrange,
                     const char *ctx, Err *err)
{
    SqlType t = f->t;
    TypeKind k = (TypeKind)t.kind;
    char jb[80], tn[48];
    int64_t unit = gen_unit(t);
    i128 dlo, dhi, a, b;
    int64_t dscale = k == TK_DECIMAL ? pow10_i64(t.scale) : 1; /* physical per whole unit */
    domain(t, &dlo, &dhi);
    if (k == TK_BOOL) {
        a = 0;
        b = 2;
    } else if (r->set) {
        a = r->a;
        b = r->b;
    } else if (type_is_temporal(k)) {
        a = 0;
        b = k == TK_DATE ? 54787 : k == TK_TIME ? 86400000 : 4102444800000LL;
    } else if (f->st == ST_UNIFORM) {
        a = dlo;
        b = dhi;
    } else {
        a = 0;
        b = dhi;
    }
    if (!fits(t, a, b - 1, unit))
        return cfg_err(err, ctx, "\"range\" %s falls outside %s",
                       jtext(jrange, jb, sizeof(jb)), type_name(t, tn, sizeof(tn)));
    if (b - a > (i128)UINT64_MAX)
        return cfg_err(err, ctx, "\"range\" %s holds more than 2^64-1 values",
                       jtext(jrange, jb, sizeof(jb)));
    f->a = (int64_t)a;
    f->n = (uint64_t)(b - a);
    f->unit = unit;
    f->step = dscale;
    switch (f->st) {
    case ST_INCREMENT: {
        f->g = G_I64_INCR;
        i128 n = (i128)f->n;
        i128 sc = k == TK_BOOL ? 1 : scale % n;
        if (sc < 0)
            sc += n;
        f->incr = (uint64_t)((u128)sc * (u128)((i128)dscale % n) % (u128)n);
        break;
    }
    case ST_UNIFORM:
        f->g = G_I64_UNIFORM;
        if (k == TK_BOOL)
            scale = 1;
        if (!fits(t, a, b - 1, (i128)scale * unit))
            return cfg_err(err, ctx, "\"range\" %s times \"scale\" %lld falls outside %s",
                           r->set ? jtext(jrange, jb, sizeof(jb)) : "(default)",
                           (long long)scale, type_name(t, tn, sizeof(tn)));
        f->mult = scale * unit;
        break;
    default: {
        f->g = G_I64_ZIPF;
        uint64_t n = (uint64_t)((f->n + (uint64_t)dscale - 1) / (uint64_t)dscale);
        f->z.n = n;
        f->z.e = e;
        break;
    }
    }
    return 0;
}

static int setup_f64(Field *f, Range *r, double scale, double e, const cJSON *jrange,
                     const char *ctx, Err *err)
{
    bool real = f->t.kind == TK_REAL;
    double max = real ? FLT_MAX : DBL_MAX;
    char jb[80];
    double a, b;
    f->real = real;
    if (r->set) {
        a = r->fa;
        b = r->fb;
        if (fabs(a) > max || fabs(b) > max)
            return cfg_err(err, ctx, "\"range\" %s falls outside REAL",
                           jtext(jrange, jb, sizeof(jb)));
    } else if (f->st == ST_UNIFORM) {
        a = -max;
        b = max;
    } else {
        a = 0;
        b = max;
    }
    f->fa = a;
    f->fscale = scale;
    switch (f->st) {
    case ST_INCREMENT:
        f->g = G_F64_INCR;
        f->span = b - a;
        if (!isfinite(f->span))
            return cfg_err(err, ctx, "\"range\" %s is too wide", jtext(jrange, jb, sizeof(jb)));
        break;
    case ST_UNIFORM:
        f->g = G_F64_UNIFORM;
        f->span = b / 2 - a / 2; /* half width: no overflow */
        f->fbelow = nextafter(b, a);
        if (!isfinite(a * scale) || !isfinite(b * scale) || fabs(a * scale) > max ||
            fabs(b * scale) > max)
            return cfg_err(err, ctx, "\"range\" times \"scale\" %g falls outside %s", scale,
                           real ? "REAL" : "DOUBLE");
        break;
    default: {
        f->g = G_F64_ZIPF;
        double n = ceil(b - a);
        f->z.n = n >= 9.2e18 ? (uint64_t)INT64_MAX : n < 1 ? 1 : (uint64_t)n;
        f->z.e = e;
        break;
    }
    }
    return 0;
}

static const char *const field_keys[] = {"strategy", "range", "scale", "values", "null_percentage", "e"};

/* Validate one column's settings fs (NULL = defaults) into f. */
static int setup_field(Datagen *g, int p, int c, const char *name, SqlType t, const cJSON *fs,
                       const char *ctx, Field *f, Err *err)
{
    char jb[80], tn[48];
    const cJSON *it;
    memset(f, 0, sizeof(*f));
    f->t = t;
    f->st = ST_INCREMENT;
    f->key = stream_key(g->seed, p, c, 0);
    f->nkey = stream_key(g->seed, p, c, 1);
    TypeKind k = (TypeKind)t.kind;
    Phys ph = type_phys(k);
    if (k == TK_NULL)
        return cfg_err(err, ctx, "column \"%s\" has a type datagen cannot generate", name);
    if (fs && !cJSON_IsObject(fs))
        return cfg_err(err, ctx, "field settings must be an object, got %s",
                       jtext(fs, jb, sizeof(jb)));
    if (fs && check_keys(fs, field_keys, ARRAY_LEN(field_keys), ctx, err))
        return SL_ECONFIG;

    if ((it = cJSON_GetObjectItemCaseSensitive(fs, "strategy"))) {
        int st = cJSON_IsString(it) ? find_strategy(it->valuestring) : -1;
        if (st < 0)
            return cfg_err(err, ctx,
                           "unknown \"strategy\" %s (expected increment, uniform, zipf, word, "
                           "words, sentence, name or email)",
                           jtext(it, jb, sizeof(jb)));
        f->st = (Strategy)st;
        if (f->st >= ST_WORD && ph != PHYS_STR)
            return cfg_err(err, ctx, "\"strategy\" \"%s\" is not valid for %s column \"%s\"",
                           strategy_names[st], type_name(t, tn, sizeof(tn)), name);
    }
    double scale = 1;
    if ((it = cJSON_GetObjectItemCaseSensitive(fs, "scale"))) {
        bool ok = cJSON_IsNumber(it) && isfinite(it->valuedouble);
        if (ok && ph != PHYS_F64)
            ok = is_integral(it->valuedouble) && fabs(it->valuedouble) < 9.2e18;
        if (!ok)
            return cfg_err(err, ctx, "\"scale\" must be %s, got %s",
                           ph == PHYS_F64 ? "a finite number" : "an integer",
                           jtext(it, jb, sizeof(jb)));
        scale = it->valuedouble;
    }
    double e = 1;
    if ((it = cJSON_GetObjectItemCaseSensitive(fs, "e"))) {
        if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble) || it->valuedouble < 0 ||
            it->valuedouble > 100)
            return cfg_err(err, ctx, "\"e\" must be a number in [0, 100], got %s",
                           jtext(it, jb, sizeof(jb)));
        e = it->valuedouble;
    }
    if ((it = cJSON_GetObjectItemCaseSensitive(fs, "null_percentage"))) {
        if (!cJSON_IsNumber(it) || !(it->valuedouble >= 0 && it->valuedouble <= 100))
            return cfg_err(err, ctx, "\"null_percentage\" must be a number in [0, 100], got %s",
                           jtext(it, jb, sizeof(jb)));
        double pct = it->valuedouble;
        if (pct > 0 && !t.nullable)
            return cfg_err(err, ctx, "\"null_percentage\" is %s but column \"%s\" is NOT NULL",
                           jtext(it, jb, sizeof(jb)), name);
        if (pct >= 100)
            f->all_null = true;
        else
            f->nthr = (uint64_t)ldexpl((long double)pct / 100.0L, 64);
    }
    Range r = {0};
    const cJSON *jrange = cJSON_GetObjectItemCaseSensitive(fs, "range");
    if (jrange) {
        if (k == TK_BOOL)
            return cfg_err(err, ctx, "\"range\" is not supported for BOOLEAN column \"%s\"", name);
        if (parse_range(jrange, t, ph == PHYS_STR, &r, ctx, err))
            return SL_ECONFIG;
    }
    if ((it = cJSON_GetObjectItemCaseSensitive(fs, "values"))) {
        if (f->st >= ST_WORD)
            return cfg_err(err, ctx, "\"values\" cannot be used with \"strategy\" \"%s\"",
                           strategy_names[f->st]);
        if (parse_values(it, f, g->arena, &f->v, name, ctx, err))
            return SL_ECONFIG;
        f->g = G_VALUES;
        if (f->st == ST_ZIPF)
            zipf_init(&f->z, f->v.n, e, g->arena);
        return 0;
    }

    if (ph == PHYS_I64) {
        if (setup_i64(f, &r, (int64_t)scale, e, jrange, ctx, err))
            return SL_ECONFIG;
    } else if (ph == PHYS_F64) {
        if (setup_f64(f, &r, scale, e, jrange, ctx, err))
            return SL_ECONFIG;
    } else {
        f->scale = (int64_t)scale;
        int64_t lo = 0, hi = 25;
        if (f->st == ST_WORDS) {
            lo = 1;
            hi = 5;
        } else if (f->st == ST_SENTENCE) {
            lo = 4;
            hi = 12;
        }
        if (r.set) {
            lo = (int64_t)r.a;
            hi = (int64_t)r.b;
        }
        f->lo = lo;
        f->n = (uint64_t)(hi - lo);
        f->wl = &words_lorem;
        for (uint32_t w = 0; w < f->wl->n; w++)
            f->wmax = SL_MAX(f->wmax, (size_t)f->wl->w[w].n);
        switch (f->st) {
        case ST_INCREMENT: f->g = G_STR_INCR; break;
        case ST_UNIFORM: f->g = G_STR_ALNUM; break;
        case ST_ZIPF:
            f->g = G_STR_ZIPF;
            f->z.n = f->n;
            f->z.e = e;
            break;
        case ST_WORD:
        case ST_WORDS:
        case ST_SENTENCE: f->g = G_STR_WORDS; break;
        case ST_NAME: f->g = G_STR_NAME; break;
        case ST_EMAIL: f->g = G_STR_EMAIL; break;
        }
    }
    if (f->z.n)
        zipf_init(&f->z, f->z.n, e, g->arena);
    return 0;
}

/* Column index of a fields key: exact name first, else unique
   case-insensitive match; -1 when none, -2 when ambiguous. */
static int find_column(const char *key, int ncols, const char *const *names)
{
    int found = -1;
    for (int c = 0; c < ncols; c++)
        if (strcmp(key, names[c]) == 0)
            return c;
    for (int c = 0; c < ncols; c++) {
        if (strcasecmp(key, names[c]) == 0) {
            if (found >= 0)
                return -2;
            found = c;
        }
    }
    return found;
}

static const char *const plan_keys[] = {"limit", "rate", "worker_chunk_size", "fields"};

static int setup_plan(Datagen *g, int p, const cJSON *jp, int ncols, const char *const *names,
                      const SqlType *types, const char *where, Plan *pl, Err *err)
{
    char ctx[512], fctx[768], jb[80];
    const cJSON *it;
    snprintf(ctx, sizeof(ctx), "plan %d of %s", p, where);
    if (!cJSON_IsObject(jp))
        return cfg_err(err, where, "plan %d must be an object, got %s", p,
                       jtext(jp, jb, sizeof(jb)));
    if (check_keys(jp, plan_keys, ARRAY_LEN(plan_keys), ctx, err))
        return SL_ECONFIG;
    pl->limit = -1;
    pl->rate = 0;
    if ((it = cJSON_GetObjectItemCaseSensitive(jp, "limit")) &&
        get_int(it, "limit", 0, 9.2e18, "a non-negative integer", &pl->limit, ctx, err))
        return SL_ECONFIG;
    if ((it = cJSON_GetObjectItemCaseSensitive(jp, "rate"))) {
        if (!cJSON_IsNumber(it) || !(it->valuedouble > 0) || !isfinite(it->valuedouble))
            return cfg_err(err, ctx, "\"rate\" must be a number of rows per second > 0, got %s",
                           jtext(it, jb, sizeof(jb)));
        pl->rate = it->valuedouble;
    }
    pl->chunk = DEFAULT_CHUNK;
    if (pl->rate > 0 && pl->rate < DEFAULT_CHUNK)
        pl->chunk = pl->rate < 1 ? 1 : (int64_t)pl->rate;
    if ((it = cJSON_GetObjectItemCaseSensitive(jp, "worker_chunk_size")) &&
        get_int(it, "worker_chunk_size", 1, 9.2e18, "a positive integer", &pl->chunk, ctx, err))
        return SL_ECONFIG;

    const cJSON *fields = cJSON_GetObjectItemCaseSensitive(jp, "fields");
    const cJSON **per_col = sl_calloc((size_t)(ncols > 0 ? ncols : 1), sizeof(*per_col));
    int rc = 0;
    if (fields && !cJSON_IsObject(fields)) {
        rc = cfg_err(err, ctx, "\"fields\" must be an object mapping columns to settings, got %s",
                     jtext(fields, jb, sizeof(jb)));
        goto out_free_cols;
    }
    cJSON_ArrayForEach(it, fields)
    {
        int c = find_column(it->string, ncols, names);
        if (c < 0) {
            rc = cfg_err(err, ctx, "\"fields\" names %s column \"%s\"",
                         c == -2 ? "ambiguous" : "unknown", it->string);
            goto out_free_cols;
        }
        if (per_col[c]) {
            rc = cfg_err(err, ctx, "\"fields\" sets column \"%s\" twice", names[c]);
            goto out_free_cols;
        }
        per_col[c] = it;
    }
    pl->f = arena_zalloc(g->arena, sizeof(Field) * (size_t)(ncols > 0 ? ncols : 1));
    for (int c = 0; c < ncols; c++) {
        snprintf(fctx, sizeof(fctx), "field \"%s\" of %s", names[c], ctx);
        rc = setup_field(g, p, c, names[c], types[c], per_col[c], fctx, &pl->f[c], err);
        if (rc)
            goto out_free_cols;
    }
out_free_cols:
    sl_free(per_col);
    return rc;
}

static const char *const top_keys[] = {"seed", "workers", "plan"};

Datagen *datagen_new(const cJSON *config, int ncols, const char *const *names,
                     const SqlType *types, const char *where, Err *err)
{
    Arena *a = arena_new(0);
    Datagen *g = arena_zalloc(a, sizeof(*g));
    const cJSON *it;
    char jb[80];
    g->arena = a;
    g->workers = 1;
    g->ncols = ncols;
    if (!where)
        where = "datagen";
    if (cJSON_IsNull(config))
        config = NULL;
    if (config && !cJSON_IsObject(config)) {
        cfg_err(err, where, "the datagen config must be an object, got %s",
                jtext(config, jb, sizeof(jb)));
        goto out_free;
    }
    if (config && check_keys(config, top_keys, ARRAY_LEN(top_keys), where, err))
        goto out_free;
    if ((it = cJSON_GetObjectItemCaseSensitive(config, "seed")) &&
        parse_seed(it, &g->seed, where, err))
        goto out_free;
    if ((it = cJSON_GetObjectItemCaseSensitive(config, "workers"))) {
        int64_t w = 1;
        if (get_int(it, "workers", 1, 4096, "an integer in [1, 4096]", &w, where, err))
            goto out_free;
        g->workers = (int)w;
    }
    const cJSON *plans = cJSON_GetObjectItemCaseSensitive(config, "plan");
    if (plans && (!cJSON_IsArray(plans) || cJSON_GetArraySize(plans) < 1)) {
        cfg_err(err, where, "\"plan\" must be a non-empty array of plans, got %s",
                jtext(plans, jb, sizeof(jb)));
        goto out_free;
    }
    g->nplans = plans ? cJSON_GetArraySize(plans) : 1;
    g->plans = arena_zalloc(a, sizeof(Plan) * (size_t)g->nplans);
    if (!plans) {
        cJSON *empty = cJSON_CreateObject();
        int rc = setup_plan(g, 0, empty, ncols, names, types, where, &g->plans[0], err);
        cJSON_Delete(empty);
        if (rc)
            goto out_free;
    } else {
        int p = 0;
        cJSON_ArrayForEach(it, plans)
        {
            if (setup_plan(g, p, it, ncols, names, types, where, &g->plans[p], err))
                goto out_free;
            p++;
        }
    }
    return g;
out_free:
    arena_free(a);
    return NULL;
}
