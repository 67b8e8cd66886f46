/*
 * io/datagen_config.c - the datagen connector's configuration: the
 * transport's "config" JSON checked key by key and turned into the plain
 * generator description of datagen_int.h (plans of per-column Fields:
 * strategy, fill loop, bounds in generation units, scale, values, NULL
 * threshold).
 *
 * In: the JSON and the table's columns, from datagen_new (datagen.c), which
 * gets them from the connector (io/connector.c). Out: a filled struct
 * Datagen, or SL_ECONFIG with a message naming the key, the column, the
 * plan and the connector ("... in field \"x\" of plan 0 of table t,
 * connector 0 (datagen)"). Every check happens here; nothing is drawn. What
 * each strategy generates is told in datagen.c.
 *
 * Values are parsed per column type: JSON numbers (generation units for
 * temporal types) or strings in text.h syntax (TIMESTAMP strings may be
 * RFC 3339 with Z or a +hh:mm offset); null for nullable columns only.
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
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "../base/mem.h"
#include "../expr/text.h"
#include "datagen_int.h"

#define DEFAULT_CHUNK 10000

static const char *const strategy_names[] = {"increment", "uniform", "zipf", "word",
                                             "words",     "sentence", "name", "email"};

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
    int p = t.prec ? t.prec : DECIMAL64_MAX_PREC;
    switch ((TypeKind)t.kind) {
    case TK_BOOL: *lo = 0; *hi = 1; break;
    case TK_DECIMAL: *hi = pow10_i64(p) - 1; *lo = -*hi; break;
    case TK_DATE: *lo = -719162; *hi = 2932896; break; /* 0001-01-01 .. 9999-12-31 */
    case TK_TIME: *lo = 0; *hi = 86400000000LL - 1; break;
    case TK_TIMESTAMP:
    case TK_TIMESTAMPTZ: *lo = -62135596800000000LL; *hi = 253402300800000000LL - 1; break;
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
    return (t.kind == TK_TIME || type_is_ts(t.kind)) ? 1000 : 1;
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
    Phys ph = type_phys(t);
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
            wide.prec = DECIMAL64_MAX_PREC;
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
            pt.prec = DECIMAL64_MAX_PREC;
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
            if (type_phys(t) == PHYS_F64 && !isfinite(*fv))
                return cfg_err(err, ctx, "\"range\" bounds must be finite");
        }
    }
    bool empty = type_phys(t) == PHYS_F64 && !lengths ? !(r->fa < r->fb)
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
    Phys ph = type_phys(f->t);
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
static int setup_field(Arena *a, const char *name, SqlType t, const cJSON *fs, const char *ctx,
                       Field *f, Err *err)
{
    char jb[80], tn[48];
    const cJSON *it;
    memset(f, 0, sizeof(*f));
    if (type_is_wide(t)) { /* values of DECIMAL(18, min(s, 6)), widened by datagen_fill */
        t.prec = DECIMAL64_MAX_PREC;
        t.scale = (uint8_t)SL_MIN(t.scale, 6);
    }
    f->t = t;
    f->st = ST_INCREMENT;
    TypeKind k = (TypeKind)t.kind;
    Phys ph = type_phys(t);
    if (k == TK_NULL)
        return cfg_err(err, ctx, "column \"%s\" has a type datagen cannot generate", name);
    if (fs && !cJSON_IsObject(fs))
        return cfg_err(err, ctx, "field settings must be an object, got %s",
                       jtext(fs, jb, sizeof(jb)));
    if (fs && check_keys(fs, field_keys, ARRAY_LEN(field_keys), ctx, err))
        return SL_ECONFIG;
    if (k == TK_VARIANT && !cJSON_GetObjectItemCaseSensitive(fs, "values"))
        return cfg_err(err, ctx, "datagen fills VARIANT column \"%s\" only from \"values\" "
                       "(JSON texts, as strings)", name);
    if ((k == TK_ARRAY || k == TK_MAP || k == TK_ROW) &&
        !cJSON_GetObjectItemCaseSensitive(fs, "values"))
        return cfg_err(err, ctx, "datagen fills %s column \"%s\" only from \"values\" "
                       "(its texts, as strings: %s)", type_name(t, tn, sizeof(tn)), name,
                       k == TK_ARRAY ? "[\"{1,2}\", \"{}\"]"
                       : k == TK_MAP ? "[\"{a=>1}\"]" : "[\"(1,x)\"]");

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
        if (parse_values(it, f, a, &f->v, name, ctx, err))
            return SL_ECONFIG;
        f->g = G_VALUES;
        if (f->st == ST_ZIPF) {
            f->z.n = f->v.n;
            f->z.e = e;
        }
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
        rc = setup_field(g->arena, names[c], types[c], per_col[c], fctx, &pl->f[c], err);
        if (rc)
            goto out_free_cols;
    }
out_free_cols:
    sl_free(per_col);
    return rc;
}

static const char *const top_keys[] = {"seed", "workers", "plan"};

int datagen_config_parse(Datagen *g, const cJSON *config, int ncols, const char *const *names,
                         const SqlType *types, const char *where, Err *err)
{
    const cJSON *it;
    char jb[80];
    g->workers = 1;
    g->ncols = ncols;
    if (!where)
        where = "datagen";
    if (cJSON_IsNull(config))
        config = NULL;
    if (config && !cJSON_IsObject(config))
        return cfg_err(err, where, "the datagen config must be an object, got %s",
                       jtext(config, jb, sizeof(jb)));
    if (config && check_keys(config, top_keys, ARRAY_LEN(top_keys), where, err))
        return SL_ECONFIG;
    if ((it = cJSON_GetObjectItemCaseSensitive(config, "seed")) &&
        parse_seed(it, &g->seed, where, err))
        return SL_ECONFIG;
    if ((it = cJSON_GetObjectItemCaseSensitive(config, "workers"))) {
        int64_t w = 1;
        if (get_int(it, "workers", 1, 4096, "an integer in [1, 4096]", &w, where, err))
            return SL_ECONFIG;
        g->workers = (int)w;
    }
    const cJSON *plans = cJSON_GetObjectItemCaseSensitive(config, "plan");
    if (plans && (!cJSON_IsArray(plans) || cJSON_GetArraySize(plans) < 1))
        return cfg_err(err, where, "\"plan\" must be a non-empty array of plans, got %s",
                       jtext(plans, jb, sizeof(jb)));
    g->nplans = plans ? cJSON_GetArraySize(plans) : 1;
    g->plans = arena_zalloc(g->arena, sizeof(Plan) * (size_t)g->nplans);
    if (!plans) {
        cJSON *empty = cJSON_CreateObject();
        int rc = setup_plan(g, 0, empty, ncols, names, types, where, &g->plans[0], err);
        cJSON_Delete(empty);
        return rc;
    }
    int p = 0;
    cJSON_ArrayForEach(it, plans)
    {
        if (setup_plan(g, p, it, ncols, names, types, where, &g->plans[p], err))
            return SL_ECONFIG;
        p++;
    }
    return 0;
}
