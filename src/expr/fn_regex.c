/*
 * expr/fn_regex.c - regular expressions (PCRE2, JIT-compiled) and the
 * functions built on them: REGEXP_EXTRACT (Flink), REGEXP_LIKE (also the
 * operators ~ ~* !~ !~*, RLIKE, REGEXP and SIMILAR TO), REGEXP_REPLACE,
 * REGEXP_COUNT, REGEXP_SUBSTR, REGEXP_INSTR (PostgreSQL 15), the SIMILAR TO
 * pattern translation, and SPLIT_PART, which has no regex but is the same
 * family in PostgreSQL's docs.
 * In: operand vectors from expr.c (kernel convention of expr_int.h).
 * Out: result vectors (strings in cx->arena, or slices of the subject).
 *
 * Compiled patterns. Expressions are shared read-only by the worker
 * threads, so a compiled pattern does not live in the Expr: each thread
 * keeps a small cache of compiled patterns (RX_SLOTS entries keyed by the
 * pattern's bytes and compile options, least recently used evicted), its
 * PCRE2 match data (grown to the largest capture count seen) and a JIT
 * stack, freed when the thread exits. A constant pattern is looked up
 * once per vector and compiled once per thread; a pattern column is looked
 * up when it changes from one row to the next. Patterns are compiled with
 * PCRE2_UTF | PCRE2_MATCH_INVALID_UTF (strings are UTF-8; invalid bytes
 * never match a character, never an error) and then JIT-compiled; when
 * JIT is unavailable the interpreter runs instead. A match that exceeds
 * PCRE2's match or depth limit (catastrophic backtracking) is a run-time
 * error for that row, never a hang.
 *
 * Semantics are PCRE2's (Perl's): the leftmost match, alternatives tried
 * in order (leftmost-first), where PostgreSQL's engine prefers the longest
 * match in some patterns; docs/sql.md lists the differences. PostgreSQL
 * flags map onto compile options (regex_flags below). Positions (start,
 * REGEXP_INSTR's result) count characters, as PostgreSQL does.
 *
 * Errors: a pattern that does not compile, a bad flag, a bad argument
 * (start < 1, N < 1, SPLIT_PART field 0) are SL_ERUNTIME errors for the
 * row; the binder checks constant patterns and flags with
 * expr_regex_check first, so those fail at compile time with a position.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <pthread.h>
#include <string.h>

#include "../base/mem.h"
#include "expr_int.h"

#define RX_SLOTS 16
#define RX_MATCH_LIMIT 10000000u /* PCRE2's default: backtracking steps */
#define RX_DEPTH_LIMIT 100000u
#define RX_JIT_STACK_MAX (1u << 20)

static const Str empty_str = {"", 0};

/* ---------------------------------------------------------------- flags */

/* Compile options and the 'g' (global) flag of a PostgreSQL flags string
   (docs/sql.md): i c (case), n m (newline-sensitive), s (the default), p,
   w (partial newline sensitivity), x (expanded), q (literal), t (the
   default, tight syntax). base: the options before the flags. Returns 0, or
   SL_ERUNTIME with the message in err (an unknown letter, b/e for other
   regex flavours, or 'g' when !allow_g). */
static int regex_flags(Str f, uint32_t base, bool allow_g, const char *fn, uint32_t *opts,
                       bool *global, Err *err)
{
    uint32_t o = base;
    bool g = false;
    for (uint32_t j = 0; j < f.n; j++) {
        switch (f.p[j]) {
        case 'i': o |= PCRE2_CASELESS; break;
        case 'c': o &= ~(uint32_t)PCRE2_CASELESS; break;
        case 'n':
        case 'm': o = (o | PCRE2_MULTILINE) & ~(uint32_t)PCRE2_DOTALL; break;
        case 's': o = (o | PCRE2_DOTALL) & ~(uint32_t)PCRE2_MULTILINE; break;
        case 'p': o &= ~(uint32_t)(PCRE2_DOTALL | PCRE2_MULTILINE); break;
        case 'w': o |= PCRE2_DOTALL | PCRE2_MULTILINE; break;
        case 'x': o |= PCRE2_EXTENDED; break;
        case 'q': o |= PCRE2_LITERAL; break;
        case 't': o &= ~(uint32_t)PCRE2_EXTENDED; break;
        case 'g':
            if (!allow_g)
                return err_set(err, SL_ERUNTIME, "%s does not support the \"global\" option",
                               fn);
            g = true;
            break;
        case 'b':
        case 'e':
            return err_set(err, SL_ERUNTIME,
                           "regular expression option \"%c\" (basic/extended POSIX syntax) "
                           "is not supported: patterns are Perl-compatible (PCRE2)",
                           f.p[j]);
        default:
            return err_set(err, SL_ERUNTIME, "invalid regular expression option: \"%.*s\"",
                           (int)expr__utf8_offset(f.p + j, f.n - j, 1), f.p + j);
        }
    }
    /* PCRE2_LITERAL allows only some options with it */
    if (o & PCRE2_LITERAL)
        o &= ~(uint32_t)(PCRE2_EXTENDED | PCRE2_MULTILINE | PCRE2_DOTALL | PCRE2_DOLLAR_ENDONLY);
    *opts = o;
    if (global)
        *global = g;
    return 0;
}

#define RX_UTF (PCRE2_UTF | PCRE2_MATCH_INVALID_UTF)
/* PostgreSQL's defaults: . matches a newline, $ only at the very end. */
#define RX_PG (RX_UTF | PCRE2_DOTALL | PCRE2_DOLLAR_ENDONLY)
/* Java's (Flink's REGEXP_EXTRACT): . stops at a newline, $ before a final one. */
#define RX_JAVA RX_UTF

/* ------------------------------------------------------ per-thread cache */

typedef struct RxEntry {
    char *pat;        /* pattern bytes (heap), NULL when the slot is free */
    uint32_t n;
    uint32_t opts;    /* compile options */
    pcre2_code *re;
    uint32_t ncap;    /* capture groups */
    bool jit;         /* JIT-compiled: pcre2_jit_match */
    uint64_t used;    /* clock of the last lookup */
} RxEntry;

typedef struct RxTls {
    RxEntry e[RX_SLOTS];
    RxEntry *last;    /* the entry of the last lookup */
    uint64_t clock;
    pcre2_match_data *md;
    uint32_t mdcap;   /* ovector pairs of md */
    pcre2_match_context *mc;
    pcre2_jit_stack *js;
} RxTls;

static pthread_key_t rx_key;
static pthread_once_t rx_once = PTHREAD_ONCE_INIT;
static __thread RxTls *rx_tls;

static void rx_entry_clear(RxEntry *x)
{
    pcre2_code_free(x->re);
    sl_free(x->pat);
    memset(x, 0, sizeof(*x));
}

static void rx_tls_free(void *v)
{
    RxTls *t = v;
    if (!t)
        return;
    for (int j = 0; j < RX_SLOTS; j++)
        if (t->e[j].pat)
            rx_entry_clear(&t->e[j]);
    pcre2_match_data_free(t->md);
    pcre2_match_context_free(t->mc);
    pcre2_jit_stack_free(t->js);
    sl_free(t);
    if (rx_tls == t)
        rx_tls = NULL;
}

static void rx_key_init(void) { pthread_key_create(&rx_key, rx_tls_free); }

static RxTls *rx_thread(void)
{
    if (likely(rx_tls != NULL))
        return rx_tls;
    pthread_once(&rx_once, rx_key_init);
    RxTls *t = sl_calloc(1, sizeof(*t));
    t->mc = pcre2_match_context_create(NULL);
    if (!t->mc)
        sl_panic("pcre2_match_context_create failed");
    pcre2_set_match_limit(t->mc, RX_MATCH_LIMIT);
    pcre2_set_depth_limit(t->mc, RX_DEPTH_LIMIT);
    t->js = pcre2_jit_stack_create(32 * 1024, RX_JIT_STACK_MAX, NULL);
    if (t->js)
        pcre2_jit_stack_assign(t->mc, NULL, t->js);
    rx_tls = t;
    pthread_setspecific(rx_key, t);
    return t;
}

/* Compiles pattern p with opts: the code, or NULL with PCRE2's message
   and the character offset of the error in err (code SL_ERUNTIME). */
static pcre2_code *rx_compile(Str p, uint32_t opts, Err *err, int *offset)
{
    int ec;
    PCRE2_SIZE eo;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)(p.n ? p.p : ""), p.n, opts, &ec, &eo, NULL);
    if (re)
        return re;
    PCRE2_UCHAR why[256];
    if (pcre2_get_error_message(ec, why, sizeof(why)) < 0)
        strcpy((char *)why, "unknown error");
    size_t at = eo <= p.n ? expr__utf8_len(p.p, eo) : 0;
    if (offset)
        *offset = (int)at;
    err_set(err, SL_ERUNTIME, "invalid regular expression '%.*s': %s at character %zu",
            (int)(p.n > 200 ? 200 : p.n), p.p, (const char *)why, at + 1);
    return NULL;
}

/* The thread's compiled form of (p, opts), compiling it on a miss; NULL
   with err set when p does not compile. */
static RxEntry *rx_get(RxTls *t, Str p, uint32_t opts, Err *err)
{
    RxEntry *x = t->last;
    if (x && x->opts == opts && x->n == p.n && (!p.n || !memcmp(x->pat, p.p, p.n)))
        return x;
    RxEntry *victim = &t->e[0];
    for (int j = 0; j < RX_SLOTS; j++) {
        x = &t->e[j];
        if (x->pat && x->opts == opts && x->n == p.n && (!p.n || !memcmp(x->pat, p.p, p.n))) {
            x->used = ++t->clock;
            return t->last = x;
        }
        if (!x->pat || x->used < victim->used)
            victim = x;
    }
    pcre2_code *re = rx_compile(p, opts, err, NULL);
    if (!re)
        return NULL;
    if (victim->pat)
        rx_entry_clear(victim);
    x = victim;
    x->pat = sl_malloc(p.n ? p.n : 1);
    if (p.n)
        memcpy(x->pat, p.p, p.n);
    x->n = p.n;
    x->opts = opts;
    x->re = re;
    uint32_t nc = 0;
    pcre2_pattern_info(re, PCRE2_INFO_CAPTURECOUNT, &nc);
    x->ncap = nc;
    x->jit = pcre2_jit_compile(re, PCRE2_JIT_COMPLETE) == 0;
    x->used = ++t->clock;
    if (nc + 1 > t->mdcap) {
        pcre2_match_data_free(t->md);
        t->mdcap = nc + 1 < 16 ? 16 : nc + 1;
        t->md = pcre2_match_data_create(t->mdcap, NULL);
        if (!t->md)
            sl_panic("pcre2_match_data_create failed (%u pairs)", t->mdcap);
    }
    return t->last = x;
}

/* One match of x in s[0..n) at or after byte `from`: 1 (offsets in
   *ov: pairs, PCRE2_UNSET for a group that took no part), 0 (none), or
   SL_ERUNTIME (a limit was hit). */
static int rx_match(RxTls *t, RxEntry *x, Str s, size_t from, PCRE2_SIZE **ov, EvalCtx *cx)
{
    PCRE2_SPTR subj = (PCRE2_SPTR)(s.n ? s.p : "");
    int rc = x->jit ? pcre2_jit_match(x->re, subj, s.n, from, 0, t->md, t->mc)
                    : pcre2_match(x->re, subj, s.n, from, 0, t->md, t->mc);
    if (rc >= 0) {
        *ov = pcre2_get_ovector_pointer(t->md);
        return 1;
    }
    if (rc == PCRE2_ERROR_NOMATCH)
        return 0;
    PCRE2_UCHAR why[256];
    if (pcre2_get_error_message(rc, why, sizeof(why)) < 0)
        strcpy((char *)why, "unknown error");
    return err_set(cx->err, SL_ERUNTIME, "regular expression '%.*s' failed on a value: %s",
                   (int)(x->n > 200 ? 200 : x->n), x->pat, (const char *)why);
}

int expr_regex_check(const char *pat, size_t n, const char *flags, size_t nflags, int fn,
                     Err *err, int *offset)
{
    if (offset)
        *offset = -1;
    uint32_t opts = fn == FN_REGEXP_EXTRACT ? RX_JAVA : RX_PG;
    const char *name = expr__fn_name(fn);
    if (flags && regex_flags((Str){flags, (uint32_t)nflags}, opts,
                             fn == FN_REGEXP_REPLACE, name ? name : "?", &opts, NULL, err))
        return SL_ERUNTIME;
    pcre2_code *re = rx_compile((Str){pat, (uint32_t)n}, opts, err, offset);
    if (!re)
        return SL_ERUNTIME;
    pcre2_code_free(re);
    return 0;
}

/* ------------------------------------------------------------- operands */

static Str arg_str(const Vec *v, int64_t k)
{
    if (!v->s)
        return empty_str;
    Str s = v->s[k];
    return s.p ? s : empty_str;
}

static int64_t arg_int(const Vec *v, int64_t k) { return v->i ? v->i[k] : 0; }

/* The compiled pattern of row k: args[pi] with flags args[fi] (fi < 0:
   none) over options base; cached in *have for the next rows. */
typedef struct RowRx {
    RxEntry *x;
    Str pat, flags;
    bool global;
} RowRx;

static RxEntry *row_rx(RxTls *t, const Vec *args, int pi, int fi, uint32_t base, int fn,
                       int64_t k, RowRx *have, EvalCtx *cx)
{
    Str p = arg_str(&args[pi], k), f = fi >= 0 ? arg_str(&args[fi], k) : empty_str;
    if (have->x && p.p == have->pat.p && p.n == have->pat.n && f.p == have->flags.p &&
        f.n == have->flags.n)
        return have->x;
    uint32_t opts = base;
    if (fi >= 0 && regex_flags(f, base, fn == FN_REGEXP_REPLACE, expr__fn_name(fn), &opts,
                               &have->global, cx->err))
        return NULL;
    RxEntry *x = rx_get(t, p, opts, cx->err);
    if (!x)
        return NULL;
    /* a constant's slot (or a repeated value) skips the lookup next time */
    have->x = x;
    have->pat = p;
    have->flags = f;
    return x;
}

/* Byte offset of character `chars` (0-based) in s, or s.n + 1 when s has
   fewer characters (a start past the end). */
static size_t char_start(Str s, int64_t chars)
{
    size_t j = expr__utf8_offset(s.p, s.n, (size_t)chars);
    if (j == s.n && expr__utf8_len(s.p, s.n) < (size_t)chars)
        return s.n + 1;
    return j;
}

/* The byte after the character at j. */
static size_t next_char(Str s, size_t j)
{
    j++;
    while (j < s.n && ((uint8_t)s.p[j] & 0xC0) == 0x80)
        j++;
    return j;
}

/* Checks a start (>= 1) or N (>= 1) argument. */
static int check_pos(EvalCtx *cx, const char *fn, const char *what, int64_t v, int64_t min)
{
    if (v >= min)
        return 0;
    return err_set(cx->err, SL_ERUNTIME, "invalid value for parameter \"%s\" of %s: %lld", what,
                   fn, (long long)v);
}

/* ------------------------------------------------------------ functions */

/* REGEXP_EXTRACT(s, pattern, i): group i (0: the whole match) of the first
   match, a slice of s; NULL when nothing matches, i is not a group or
   group i took no part. */
static int regexp_extract(RxTls *t, const Vec *args, int64_t n, EvalCtx *cx, Vec *out, uint8_t *m)
{
    RowRx have = {0};
    for (int64_t k = 0; k < n; k++) {
        out->s[k] = empty_str;
        if (m[k])
            continue;
        RxEntry *x = row_rx(t, args, 1, -1, RX_JAVA, FN_REGEXP_EXTRACT, k, &have, cx);
        if (!x)
            return SL_ERUNTIME;
        int64_t g = arg_int(&args[2], k);
        PCRE2_SIZE *ov;
        int rc;
        if (g < 0 || g > (int64_t)x->ncap ||
            (rc = rx_match(t, x, arg_str(&args[0], k), 0, &ov, cx)) == 0) {
            m[k] = 1;
            continue;
        }
        if (rc < 0)
            return rc;
        if (ov[2 * g] == PCRE2_UNSET) {
            m[k] = 1;
            continue;
        }
        Str s = arg_str(&args[0], k);
        out->s[k] = (Str){s.p + ov[2 * g], (uint32_t)(ov[2 * g + 1] - ov[2 * g])};
    }
    return 0;
}

/* REGEXP_LIKE(s, pattern, flags) -> BOOLEAN. */
static int regexp_like(RxTls *t, const Vec *args, int64_t n, EvalCtx *cx, Vec *out, uint8_t *m)
{
    RowRx have = {0};
    for (int64_t k = 0; k < n; k++) {
        out->i[k] = 0;
        if (m[k])
            continue;
        RxEntry *x = row_rx(t, args, 1, 2, RX_PG, FN_REGEXP_LIKE, k, &have, cx);
        if (!x)
            return SL_ERUNTIME;
        PCRE2_SIZE *ov;
        int rc = rx_match(t, x, arg_str(&args[0], k), 0, &ov, cx);
        if (rc < 0)
            return rc;
        out->i[k] = rc;
    }
    return 0;
}

/* The matches of x in s from byte `from` on, PostgreSQL's way: after an
   empty match the search goes on one character later. Calls fn for each
   (match number from 1, the ovector); stops when fn returns nonzero (1:
   done, < 0: error). Returns 0 or the error. */
typedef int (*MatchFn)(void *ctx, int64_t i, const PCRE2_SIZE *ov, uint32_t ncap);

static int each_match(RxTls *t, RxEntry *x, Str s, size_t from, EvalCtx *cx, MatchFn fn,
                      void *ctx)
{
    for (int64_t i = 1; from <= s.n; i++) {
        PCRE2_SIZE *ov;
        int rc = rx_match(t, x, s, from, &ov, cx);
        if (rc <= 0)
            return rc;
        size_t so = ov[0], eo = ov[1];
        if ((rc = fn(ctx, i, ov, x->ncap)))
            return rc < 0 ? rc : 0;
        from = so == eo ? next_char(s, eo) : eo;
        if (so == eo && eo >= s.n)
            break;
    }
    return 0;
}

static int count_fn(void *ctx, int64_t i, const PCRE2_SIZE *ov, uint32_t ncap)
{
    *(int64_t *)ctx = i;
    return 0;
}

/* REGEXP_COUNT(s, pattern, start, flags) -> INT. */
static int regexp_count(RxTls *t, const Vec *args, int64_t n, EvalCtx *cx, Vec *out, uint8_t *m)
{
    RowRx have = {0};
    for (int64_t k = 0; k < n; k++) {
        out->i[k] = 0;
        if (m[k])
            continue;
        int64_t start = arg_int(&args[2], k);
        if (check_pos(cx, "regexp_count", "start", start, 1))
            return SL_ERUNTIME;
        RxEntry *x = row_rx(t, args, 1, 3, RX_PG, FN_REGEXP_COUNT, k, &have, cx);
        if (!x)
            return SL_ERUNTIME;
        Str s = arg_str(&args[0], k);
        int64_t c = 0;
        int rc = each_match(t, x, s, char_start(s, start - 1), cx, count_fn, &c);
        if (rc < 0)
            return rc;
        out->i[k] = c;
    }
    return 0;
}

/* The N-th match's group g: offsets in so and eo, or so = PCRE2_UNSET. */
typedef struct NthMatch {
    int64_t want, g;
    PCRE2_SIZE so, eo;
} NthMatch;

static int nth_fn(void *ctx, int64_t i, const PCRE2_SIZE *ov, uint32_t ncap)
{
    NthMatch *q = ctx;
    if (i < q->want)
        return 0;
    if (q->g <= (int64_t)ncap) {
        q->so = ov[2 * q->g];
        q->eo = ov[2 * q->g + 1];
    }
    return 1;
}

/* REGEXP_SUBSTR(s, pattern, start, N, flags, subexpr) -> VARCHAR (NULL
   when there is no N-th match or group subexpr did not take part), and
   REGEXP_INSTR(s, pattern, start, N, endoption, flags, subexpr) -> INT
   (the 1-based character position of the group's start, or just past
   its end when endoption is 1; 0 when none). */
static int regexp_nth(RxTls *t, int fn, const Vec *args, int64_t n, EvalCtx *cx, Vec *out,
                      uint8_t *m)
{
    bool instr = fn == FN_REGEXP_INSTR;
    int fi = instr ? 5 : 4, gi = instr ? 6 : 5;
    const char *name = instr ? "regexp_instr" : "regexp_substr";
    RowRx have = {0};
    int64_t nulls = 0;
    for (int64_t k = 0; k < n; k++) {
        if (instr)
            out->i[k] = 0;
        else
            out->s[k] = empty_str;
        if (m[k])
            continue;
        int64_t start = arg_int(&args[2], k), nth = arg_int(&args[3], k);
        int64_t g = arg_int(&args[gi], k), endo = instr ? arg_int(&args[4], k) : 0;
        if (check_pos(cx, name, "start", start, 1) || check_pos(cx, name, "n", nth, 1) ||
            check_pos(cx, name, "subexpr", g, 0))
            return SL_ERUNTIME;
        if (endo < 0 || endo > 1)
            return err_set(cx->err, SL_ERUNTIME,
                           "invalid value for parameter \"endoption\" of %s: %lld", name,
                           (long long)endo);
        RxEntry *x = row_rx(t, args, 1, fi, RX_PG, fn, k, &have, cx);
        if (!x)
            return SL_ERUNTIME;
        Str s = arg_str(&args[0], k);
        NthMatch q = {nth, g, PCRE2_UNSET, PCRE2_UNSET};
        int rc = g > (int64_t)x->ncap ? 0
                                      : each_match(t, x, s, char_start(s, start - 1), cx, nth_fn, &q);
        if (rc < 0)
            return rc;
        if (q.so == PCRE2_UNSET) {
            if (!instr) {
                m[k] = 1;
                nulls++;
            }
            continue;
        }
        if (instr)
            out->i[k] = (int64_t)expr__utf8_len(s.p, endo ? q.eo : q.so) + 1;
        else
            out->s[k] = (Str){s.p + q.so, (uint32_t)(q.eo - q.so)};
    }
    return instr ? 0 : expr__check_nulls(cx, out, "regexp_substr", nulls);
}

/* Appends replacement r for the match ov to b: \1..\9 its groups (empty
   when absent), \& the whole match, \\ a backslash (PostgreSQL). */
static void put_replacement(Buf *b, Str s, Str r, const PCRE2_SIZE *ov, uint32_t ncap)
{
    for (uint32_t j = 0; j < r.n; j++) {
        char c = r.p[j];
        if (c != '\\' || j + 1 == r.n) {
            buf_putc(b, c);
            continue;
        }
        char d = r.p[++j];
        int g = d >= '1' && d <= '9' ? d - '0' : d == '&' ? 0 : -1;
        if (g < 0) {
            if (d != '\\')
                buf_putc(b, '\\');
            buf_putc(b, d);
            continue;
        }
        if ((uint32_t)g <= ncap && ov[2 * g] != PCRE2_UNSET)
            buf_append(b, s.p + ov[2 * g], ov[2 * g + 1] - ov[2 * g]);
    }
}

typedef struct Replace {
    Buf *b;
    Str s, r;
    int64_t nth;      /* 0: every match */
    size_t done;      /* bytes of s copied so far */
} Replace;

static int replace_fn(void *ctx, int64_t i, const PCRE2_SIZE *ov, uint32_t ncap)
{
    Replace *q = ctx;
    if (q->nth && i < q->nth)
        return 0;
    buf_append(q->b, q->s.p + q->done, ov[0] - q->done);
    put_replacement(q->b, q->s, q->r, ov, ncap);
    q->done = ov[1];
    return q->nth ? 1 : 0;
}

/* REGEXP_REPLACE(s, pattern, replacement, start, N, flags) -> VARCHAR:
   the N-th match (N = -1: the first, or every one with flag 'g'; N = 0:
   every one) from character start on replaced. */
static int regexp_replace(RxTls *t, const Vec *args, int64_t n, EvalCtx *cx, Vec *out,
                          uint8_t *m)
{
    RowRx have = {0};
    Buf b = {0};
    int rc = 0;
    for (int64_t k = 0; k < n; k++) {
        out->s[k] = empty_str;
        if (m[k])
            continue;
        int64_t start = arg_int(&args[3], k), nth = arg_int(&args[4], k);
        if (check_pos(cx, "regexp_replace", "start", start, 1) ||
            (nth != -1 && check_pos(cx, "regexp_replace", "n", nth, 0))) {
            rc = SL_ERUNTIME;
            goto out_free_buf;
        }
        RxEntry *x = row_rx(t, args, 1, 5, RX_PG, FN_REGEXP_REPLACE, k, &have, cx);
        if (!x) {
            rc = SL_ERUNTIME;
            goto out_free_buf;
        }
        if (nth == -1)
            nth = have.global ? 0 : 1;
        Str s = arg_str(&args[0], k);
        buf_reset(&b);
        Replace q = {&b, s, arg_str(&args[2], k), nth, 0};
        size_t from = char_start(s, start - 1);
        if ((rc = each_match(t, x, s, from, cx, replace_fn, &q)) < 0)
            goto out_free_buf;
        if (!q.done && !b.n) { /* nothing replaced: s itself */
            out->s[k] = s;
            continue;
        }
        buf_append(&b, s.p + q.done, s.n - q.done);
        if (b.n > UINT32_MAX) {
            rc = err_set(cx->err, SL_ERUNTIME, "regexp_replace result too long (%zu bytes)", b.n);
            goto out_free_buf;
        }
        out->s[k] = b.n ? (Str){arena_strndup(cx->arena, (const char *)b.p, b.n), (uint32_t)b.n}
                        : empty_str; /* everything replaced by '' */
    }
out_free_buf:
    buf_free(&b);
    return rc;
}

/* SPLIT_PART(s, delimiter, n) -> VARCHAR: field n (1-based; negative
   counts from the end) of s split at every delimiter; '' when there is no
   such field; s itself for n = 1 or -1 when the delimiter is ''; n = 0 is
   an error (PostgreSQL 14+). */
static int split_part(const Vec *args, int64_t n, EvalCtx *cx, Vec *out, const uint8_t *m)
{
    for (int64_t k = 0; k < n; k++) {
        out->s[k] = empty_str;
        if (m[k])
            continue;
        Str s = arg_str(&args[0], k), d = arg_str(&args[1], k);
        int64_t f = arg_int(&args[2], k);
        if (f == 0)
            return err_set(cx->err, SL_ERUNTIME, "split_part: field position must not be zero");
        if (d.n == 0) {
            out->s[k] = f == 1 || f == -1 ? s : empty_str;
            continue;
        }
        if (f < 0) { /* count the fields, then take field count + f + 1 */
            int64_t fields = 1;
            for (const char *p = s.p, *e = s.p + s.n, *x;
                 (x = memmem(p, (size_t)(e - p), d.p, d.n)); p = x + d.n)
                fields++;
            f = fields + f + 1;
            if (f < 1)
                continue;
        }
        const char *p = s.p, *e = s.p + s.n, *x = NULL;
        for (; f > 1 && (x = memmem(p, (size_t)(e - p), d.p, d.n)); f--)
            p = x + d.n;
        if (f > 1)
            continue;
        x = memmem(p, (size_t)(e - p), d.p, d.n);
        out->s[k] = (Str){p, (uint32_t)((x ? x : e) - p)};
    }
    return 0;
}

/* SIMILAR TO's pattern as a PCRE2 pattern into b (PostgreSQL's
   similar_to_escape): anchored at both ends, % and _ as .* and ., the
   escape character (esc < 0: none) quoting the next one, regex
   metacharacters of POSIX that SQL does not have quoted. */
void expr_similar_to_regex(const char *p, size_t n, int esc, Buf *b)
{
    buf_puts(b, "^(?:");
    bool after_esc = false;
    int brackets = 0; /* inside [...]: copied as is */
    for (size_t j = 0; j < n; j++) {
        char c = p[j];
        if (after_esc) {
            after_esc = false;
            if (c == '"') /* SUBSTRING's separators: grouping only */
                continue;
            /* a quoted character: punctuation stands for itself, a letter
               keeps its escape meaning (\d, \w), as in PostgreSQL */
            buf_putc(b, '\\');
            buf_putc(b, c);
            continue;
        }
        if (esc >= 0 && c == (char)esc) {
            after_esc = true;
            continue;
        }
        if (brackets) {
            if (c == ']')
                brackets--;
            else if (c == '\\')
                buf_putc(b, '\\');
            buf_putc(b, c);
            continue;
        }
        switch (c) {
        case '[':
            brackets++;
            buf_putc(b, c);
            if (j + 1 < n && p[j + 1] == '^')
                buf_putc(b, p[++j]);
            if (j + 1 < n && p[j + 1] == ']')
                buf_putc(b, p[++j]);
            break;
        case '%': buf_puts(b, ".*"); break;
        case '_': buf_putc(b, '.'); break;
        case '(': buf_puts(b, "(?:"); break;
        case '\\':
        case '.':
        case '^':
        case '$': buf_putc(b, '\\'); buf_putc(b, c); break;
        default: buf_putc(b, c); break;
        }
    }
    if (after_esc) /* a trailing escape stands for itself */
        buf_puts(b, "\\\\");
    buf_puts(b, ")$");
}

/* SIMILAR_TO_ESCAPE(pattern, escape) -> VARCHAR; escape '' means none,
   more than one character is an error. */
static int similar_escape(const Vec *args, int64_t n, EvalCtx *cx, Vec *out, const uint8_t *m)
{
    Buf b = {0};
    int rc = 0;
    for (int64_t k = 0; k < n; k++) {
        out->s[k] = empty_str;
        if (m[k])
            continue;
        Str p = arg_str(&args[0], k), e = arg_str(&args[1], k);
        if (e.n > 1) {
            rc = err_set(cx->err, SL_ERUNTIME, "invalid escape string \"%.*s\": it must be "
                         "empty or one single-byte character", (int)e.n, e.p);
            goto out_free_buf;
        }
        buf_reset(&b);
        expr_similar_to_regex(p.p, p.n, e.n ? (uint8_t)e.p[0] : -1, &b);
        out->s[k] = (Str){arena_strndup(cx->arena, (const char *)b.p, b.n), (uint32_t)b.n};
    }
out_free_buf:
    buf_free(&b);
    return rc;
}

int expr__fn_regex(const Expr *e, const Vec *args, int64_t n, EvalCtx *cx, Vec *out, uint8_t *m)
{
    switch (e->fn) {
    case FN_SPLIT_PART: return split_part(args, n, cx, out, m);
    case FN_SIMILAR_ESCAPE: return similar_escape(args, n, cx, out, m);
    default: break;
    }
    RxTls *t = rx_thread();
    switch (e->fn) {
    case FN_REGEXP_EXTRACT: return regexp_extract(t, args, n, cx, out, m);
    case FN_REGEXP_LIKE: return regexp_like(t, args, n, cx, out, m);
    case FN_REGEXP_COUNT: return regexp_count(t, args, n, cx, out, m);
    case FN_REGEXP_SUBSTR:
    case FN_REGEXP_INSTR: return regexp_nth(t, e->fn, args, n, cx, out, m);
    case FN_REGEXP_REPLACE: return regexp_replace(t, args, n, cx, out, m);
    default: break;
    }
    return err_set(cx->err, SL_ERUNTIME, "regex function %d is unknown", e->fn);
}
