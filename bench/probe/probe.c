/*
 * bench/probe/probe.c - the physical-limit probe for the bank benchmark.
 *
 * Plain C, no Sluice code: generates the N rows of examples/bank.sql's
 * transactions table and computes the balance view (credits - debits per
 * account) the fastest straightforward way, as the lower bound Sluice's
 * backfill is measured against.
 *
 *   gcc -O2 -pthread -o build/bench/probe bench/probe/probe.c -lm
 *   probe N THREADS [SEED]
 *
 * Output: "account,balance" then one "A,B" line per account 1..9 (the same
 * text as the balance.csv that `sluice run --dump` writes), then one JSON
 * line {"rows":N,"threads":T,"seconds":wall,"rows_per_s":...,...}.
 *
 * Rows. Row i (0-based) of seed S is a pure function of (S, i) and is
 * bit-identical to what Sluice's datagen connector produces for bank.sql
 * (seed 0, plan 0): each random column c has a stream key
 * K_c = stream_key(S, plan 0, column c) and its draw for row i is
 * wyrand's output function of the Weyl counter K_c + i * WY_INC (one
 * 64x64->128 multiply);
 *   from_account (c=0) = 1 + mulhi(draw, 9)        uniform in [1, 10)
 *   to_account   (c=1) = 1 + mulhi(draw, 9)        uniform in [1, 10)
 *   amount       (c=2) = 1 + rank - 1, rank in 1..999 with P ~ 1/rank
 *                  (Walker/Vose alias table: bucket = mulhi(draw, 999),
 *                  keep it if the low 64 bits of draw*999 < threshold,
 *                  else take the alias)
 *   ts           (c=3) = i * 1000 ms (i seconds after 1970-01-01)
 * So `probe N T` prints exactly the balance `sluice run` computes for
 * bank.sql with limit N (a cross-check of both).
 *
 * Work. THREADS pthreads take contiguous row ranges. Each fills a buffer of
 * CHUNK rows (column arrays: from, to, amount, ts), then aggregates the
 * buffer into per-account credit and debit sums (arrays indexed by account,
 * several copies so repeated accounts do not serialize on one counter),
 * and so on. The main thread combines the per-thread sums. The timed wall
 * time covers thread start to the last join (alias table built before).
 * PROBE_CHUNK=rows overrides the buffer size (default 65536; 4K..64K
 * measure the same on a Zen 3).
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>

typedef unsigned __int128 u128;

#define WY_INC 0xA0761D6478BD642FULL
#define WY_XOR 0xE7037ED1A0B428DBULL
#define GAMMA2 0xD1B54A32D192ED03ULL

#define NACC 16          /* account slots: accounts are 1..9 */
#define ZN 999           /* zipf ranks 1..999, range [1, 1000) */
#define NCOPY 4          /* copies of the sum arrays */
#define DEFAULT_CHUNK 65536

static inline uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static inline uint64_t draw(uint64_t s)
{
    u128 t = (u128)s * (s ^ WY_XOR);
    return (uint64_t)(t >> 64) ^ (uint64_t)t;
}

static inline uint64_t mulhi(uint64_t a, uint64_t b) { return (uint64_t)(((u128)a * b) >> 64); }

static uint64_t stream_key(uint64_t seed, int p, int c, int s)
{
    uint64_t k = mix64(seed ^ 0x5EED5EED5EED5EEDULL);
    k ^= mix64(((uint64_t)(uint32_t)p << 32) ^ ((uint64_t)(uint32_t)c << 4) ^ (uint64_t)s ^ (uint64_t)GAMMA2);
    return mix64(k);
}

/* Walker/Vose alias table over weights 1/k (k = 1..ZN). */
static uint64_t zthr[ZN];
static uint32_t zalias[ZN];

static void zipf_init(void)
{
    double p[ZN], sum = 0;
    uint32_t small[ZN], large[ZN], ns = 0, nl = 0;
    for (int k = 0; k < ZN; k++) {
        p[k] = exp(-1.0 * log((double)(k + 1)));
        sum += p[k];
    }
    for (int k = 0; k < ZN; k++) {
        p[k] = p[k] * (double)ZN / sum;
        if (p[k] < 1)
            small[ns++] = (uint32_t)k;
        else
            large[nl++] = (uint32_t)k;
    }
    while (ns > 0 && nl > 0) {
        uint32_t s = small[--ns], l = large[nl - 1];
        zthr[s] = (uint64_t)ldexp(p[s], 64);
        zalias[s] = l;
        p[l] = (p[l] + p[s]) - 1;
        if (p[l] < 1) {
            nl--;
            small[ns++] = l;
        }
    }
    while (nl > 0) {
        uint32_t l = large[--nl];
        zthr[l] = UINT64_MAX;
        zalias[l] = l;
    }
    while (ns > 0) {
        uint32_t s = small[--ns];
        zthr[s] = UINT64_MAX;
        zalias[s] = s;
    }
}

typedef struct Work {
    uint64_t key_from, key_to, key_amt;
    int64_t start, end, chunk;
    int64_t credits[NACC], debits[NACC];
    pthread_t tid;
} Work;

static inline int32_t zipf_value(uint64_t u)
{
    u128 m = (u128)u * ZN;
    uint64_t k = (uint64_t)(m >> 64);
    /* branch-free choice: the comparison is unpredictable */
    uint64_t keep = 0 - (uint64_t)((uint64_t)m < zthr[k]);
    return (int32_t)(1 + ((k & keep) | (zalias[k] & ~keep)));
}

/* Scalar fill: one column at a time (each loop keeps few registers live). */
__attribute__((noinline)) static void gen_uniform9_scalar(uint64_t ctr, int64_t cnt, int32_t *restrict out)
{
    for (int64_t i = 0; i < cnt; i++, ctr += WY_INC)
        out[i] = (int32_t)(1 + mulhi(draw(ctr), 9));
}

__attribute__((noinline)) static void gen_zipf_scalar(uint64_t ctr, int64_t cnt, int32_t *restrict out)
{
    for (int64_t i = 0; i < cnt; i++, ctr += WY_INC)
        out[i] = zipf_value(draw(ctr));
}

/* ts = row index * 1000 ms, two rows per 16-byte store */
__attribute__((noinline)) static void gen_ts(int64_t start, int64_t cnt, int64_t *restrict out)
{
    typedef int64_t v2i64 __attribute__((vector_size(16)));
    v2i64 v = {start * 1000, start * 1000 + 1000}, d = {2000, 2000};
    int64_t i = 0;
    for (; i + 2 <= cnt; i += 2, v += d)
        memcpy(out + i, &v, sizeof(v));
    for (; i < cnt; i++)
        out[i] = (start + i) * 1000;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_AVX2_PATH 1
/*
 * AVX2 fill of a uniform [1, 10) column, 8 rows per step: the draw's
 * 64x64->128 product from four 32x32->64 multiplies per lane, then the
 * exact high word of u*9 from two more. Same values as the scalar loop
 * (checked at start-up). The vector units run these while the scalar
 * multiplier does the zipf column, so both uniform columns come almost free.
 */
__attribute__((target("avx2"))) static inline __m256i vdraw(__m256i a)
{
    const __m256i lo32 = _mm256_set1_epi64x(0xffffffffLL);
    __m256i b = _mm256_xor_si256(a, _mm256_set1_epi64x((long long)WY_XOR));
    __m256i ah = _mm256_srli_epi64(a, 32), bh = _mm256_srli_epi64(b, 32);
    __m256i ll = _mm256_mul_epu32(a, b), lh = _mm256_mul_epu32(a, bh);
    __m256i hl = _mm256_mul_epu32(ah, b), hh = _mm256_mul_epu32(ah, bh);
    __m256i mid = _mm256_add_epi64(_mm256_add_epi64(_mm256_srli_epi64(ll, 32), _mm256_and_si256(lh, lo32)),
                                   _mm256_and_si256(hl, lo32));
    __m256i lo = _mm256_or_si256(_mm256_and_si256(ll, lo32), _mm256_slli_epi64(mid, 32));
    __m256i hi = _mm256_add_epi64(_mm256_add_epi64(hh, _mm256_srli_epi64(lh, 32)),
                                  _mm256_add_epi64(_mm256_srli_epi64(hl, 32), _mm256_srli_epi64(mid, 32)));
    return _mm256_xor_si256(hi, lo);
}

/* high word of u * c for c < 2^32 */
__attribute__((target("avx2"))) static inline __m256i vmulhi_small(__m256i u, __m256i c)
{
    __m256i t = _mm256_srli_epi64(_mm256_mul_epu32(u, c), 32);
    return _mm256_srli_epi64(_mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(u, 32), c), t), 32);
}

__attribute__((target("avx2"))) static void gen_uniform9_avx2(uint64_t ctr, int64_t cnt,
                                                              int32_t *restrict out)
{
    const __m256i inc = _mm256_set1_epi64x((long long)(4 * WY_INC));
    const __m256i nine = _mm256_set1_epi64x(9), one = _mm256_set1_epi32(1);
    const __m256i perm = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
    __m256i c = _mm256_setr_epi64x((long long)ctr, (long long)(ctr + WY_INC),
                                   (long long)(ctr + 2 * WY_INC), (long long)(ctr + 3 * WY_INC));
    int64_t i = 0;
    for (; i + 8 <= cnt; i += 8) {
        __m256i h0 = vmulhi_small(vdraw(c), nine);
        c = _mm256_add_epi64(c, inc);
        __m256i h1 = vmulhi_small(vdraw(c), nine);
        c = _mm256_add_epi64(c, inc);
        /* low 32 bits of h0's 4 lanes then h1's 4 lanes */
        __m256i p = _mm256_permutevar8x32_epi32(_mm256_or_si256(h0, _mm256_slli_epi64(h1, 32)), perm);
        _mm256_storeu_si256((__m256i *)(out + i), _mm256_add_epi32(p, one));
    }
    gen_uniform9_scalar(ctr + (uint64_t)i * WY_INC, cnt - i, out + i);
}
#endif

static int use_avx2;

/* Fill rows [start, start+cnt) into the column buffers. */
static void generate(const Work *w, int64_t start, int64_t cnt, int32_t *restrict from,
                     int32_t *restrict to, int32_t *restrict amt, int64_t *restrict ts)
{
    uint64_t off = (uint64_t)start * WY_INC;
#ifdef HAVE_AVX2_PATH
    if (use_avx2) {
        gen_uniform9_avx2(w->key_from + off, cnt, from);
        gen_uniform9_avx2(w->key_to + off, cnt, to);
    } else
#endif
    {
        gen_uniform9_scalar(w->key_from + off, cnt, from);
        gen_uniform9_scalar(w->key_to + off, cnt, to);
    }
    gen_zipf_scalar(w->key_amt + off, cnt, amt);
    gen_ts(start, cnt, ts);
}

/* credits[to] += amount; debits[from] += amount, over NCOPY copies. */
static void aggregate(int64_t cnt, const int32_t *restrict from, const int32_t *restrict to,
                      const int32_t *restrict amt, int64_t (*restrict cr)[NACC],
                      int64_t (*restrict db)[NACC])
{
    int64_t i = 0;
    for (; i + NCOPY <= cnt; i += NCOPY) {
        for (int j = 0; j < NCOPY; j++) {
            cr[j][to[i + j]] += amt[i + j];
            db[j][from[i + j]] += amt[i + j];
        }
    }
    for (; i < cnt; i++) {
        cr[0][to[i]] += amt[i];
        db[0][from[i]] += amt[i];
    }
}

static void *run(void *arg)
{
    Work *w = arg;
    int64_t chunk = w->chunk;
    /* aligned_alloc wants a size that is a multiple of the alignment */
    size_t sz4 = ((size_t)chunk * 4 + 63) & ~(size_t)63, sz8 = ((size_t)chunk * 8 + 63) & ~(size_t)63;
    int32_t *from = aligned_alloc(64, sz4);
    int32_t *to = aligned_alloc(64, sz4);
    int32_t *amt = aligned_alloc(64, sz4);
    int64_t *ts = aligned_alloc(64, sz8);
    if (!from || !to || !amt || !ts) {
        fprintf(stderr, "probe: out of memory\n");
        exit(1);
    }
    int64_t cr[NCOPY][NACC], db[NCOPY][NACC];
    memset(cr, 0, sizeof(cr));
    memset(db, 0, sizeof(db));
    for (int64_t s = w->start; s < w->end; s += chunk) {
        int64_t cnt = w->end - s < chunk ? w->end - s : chunk;
        generate(w, s, cnt, from, to, amt, ts);
        aggregate(cnt, from, to, amt, cr, db);
        /* keep the ts column observable so it is really written */
        __asm__ volatile("" : : "r"(ts) : "memory");
    }
    for (int a = 0; a < NACC; a++) {
        w->credits[a] = w->debits[a] = 0;
        for (int j = 0; j < NCOPY; j++) {
            w->credits[a] += cr[j][a];
            w->debits[a] += db[j][a];
        }
    }
    free(from);
    free(to);
    free(amt);
    free(ts);
    return NULL;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int parse_i64(const char *s, int64_t *out)
{
    char *end;
    double d = strtod(s, &end); /* accepts 1e8 as well as 100000000 */
    if (end == s || *end || d < 0 || d > 9e18 || d != floor(d))
        return -1;
    *out = (int64_t)d;
    return 0;
}

int main(int argc, char **argv)
{
    int64_t n, threads, seed = 0, chunk = DEFAULT_CHUNK;
    if (argc < 3 || argc > 4 || parse_i64(argv[1], &n) || parse_i64(argv[2], &threads) ||
        threads < 1 || threads > 1024 || (argc == 4 && parse_i64(argv[3], &seed))) {
        fprintf(stderr, "usage: probe N THREADS [SEED]\n");
        return 2;
    }
    const char *cs = getenv("PROBE_CHUNK");
    if (cs && (parse_i64(cs, &chunk) || chunk < 1)) {
        fprintf(stderr, "probe: bad PROBE_CHUNK\n");
        return 2;
    }
    zipf_init();
#ifdef HAVE_AVX2_PATH
    __builtin_cpu_init();
    const char *sc = getenv("PROBE_SCALAR");
    use_avx2 = __builtin_cpu_supports("avx2") && !(sc && *sc && strcmp(sc, "0") != 0);
    if (use_avx2) { /* self-check: the vector fill must equal the scalar one */
        int32_t a[1003], b[1003];
        for (uint64_t k = 0; k < 64 && use_avx2; k++) {
            uint64_t c = mix64(k);
            gen_uniform9_scalar(c, 1003, a);
            gen_uniform9_avx2(c, 1003, b);
            if (memcmp(a, b, sizeof(a)) != 0) {
                fprintf(stderr, "probe: AVX2 fill differs from scalar; using scalar\n");
                use_avx2 = 0;
            }
        }
    }
#endif
    uint64_t kf = stream_key((uint64_t)seed, 0, 0, 0);
    uint64_t kt = stream_key((uint64_t)seed, 0, 1, 0);
    uint64_t ka = stream_key((uint64_t)seed, 0, 2, 0);
    Work *w = calloc((size_t)threads, sizeof(Work));
    for (int64_t t = 0; t < threads; t++) {
        w[t].key_from = kf;
        w[t].key_to = kt;
        w[t].key_amt = ka;
        w[t].start = n / threads * t + (t < n % threads ? t : n % threads);
        w[t].end = w[t].start + n / threads + (t < n % threads ? 1 : 0);
        w[t].chunk = chunk;
    }
    double t0 = now();
    for (int64_t t = 1; t < threads; t++)
        if (pthread_create(&w[t].tid, NULL, run, &w[t])) {
            fprintf(stderr, "probe: pthread_create failed\n");
            return 1;
        }
    run(&w[0]);
    for (int64_t t = 1; t < threads; t++)
        pthread_join(w[t].tid, NULL);
    int64_t credits[NACC] = {0}, debits[NACC] = {0};
    for (int64_t t = 0; t < threads; t++)
        for (int a = 0; a < NACC; a++) {
            credits[a] += w[t].credits[a];
            debits[a] += w[t].debits[a];
        }
    double secs = now() - t0;

    int64_t total = 0;
    printf("account,balance\n");
    for (int a = 1; a <= 9; a++) {
        if (credits[a] == 0 || debits[a] == 0)
            continue; /* never a to_account or never a from_account: no join row */
        printf("%d,%" PRId64 "\n", a, credits[a] - debits[a]);
        total += credits[a] - debits[a];
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("{\"rows\": %" PRId64 ", \"threads\": %" PRId64 ", \"seconds\": %.6f, "
           "\"rows_per_s\": %.0f, \"ns_per_row_per_thread\": %.3f, \"balance_sum\": %" PRId64
           ", \"peak_rss_mb\": %.1f, \"simd\": \"%s\", \"chunk\": %" PRId64 "}\n",
           n, threads, secs, secs > 0 ? (double)n / secs : 0.0,
           n > 0 ? secs * 1e9 * (double)threads / (double)n : 0.0, total,
           (double)ru.ru_maxrss / 1024.0, use_avx2 ? "avx2" : "scalar", chunk);
    free(w);
    return 0;
}
