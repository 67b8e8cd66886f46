/*
 * io/nexmark.c - the nexmark input transport: a datagen generator whose
 * single plan is "the rows of one Nexmark table among the first `events`
 * events" (connector.c opens it beside datagen; tr_datagen.c plans its
 * steps, the workers fill the ranges through datagen_fill, which hands
 * them here).
 *
 * Each of the tables person, auction and bid carries its own connector
 * with the same config; row k of a table is the k-th event of its kind
 * (nx_event_of), so the three tables together hold exactly the event
 * stream of nexmark_gen.c, whatever the worker count, host count or step
 * size. Columns are matched by name (case and underscores ignored, so
 * date_time, dateTime and DATETIME are the same; email or emailAddress,
 * creditCard or credit_card); a table may leave columns out (they are not
 * generated) but not add others, and the columns the program never reads
 * are not generated either (nexmark_skip_unread; connector.c finds them:
 * NULL, or 0 / '' when NOT NULL). Config keys (all optional; unknown keys
 * refused):
 *   events (default 100000000; 0 = unbounded), seed (0), rate (event-time
 *   events per second, 10000), base_time (ms since 1970 of event 0, 0),
 *   table ("person" | "auction" | "bid"; default the table's name),
 *   person_proportion (1), auction_proportion (3), bid_proportion (46),
 *   hot_auction_ratio (2), hot_bidders_ratio (4), hot_sellers_ratio (4),
 *   num_active_people (1000), num_in_flight_auctions (100),
 *   avg_person_byte_size (200), avg_auction_byte_size (500),
 *   avg_bid_byte_size (100).
 */
#include <math.h>
#include <string.h>
#include <strings.h>

#include "../base/mem.h"
#include "datagen_int.h"
#include "nexmark_gen.h"

#define NX_BLOCK 256

struct NexmarkSrc {
    NxGen *gen;
    NxKind kind;
    int ncols;
    NxField *field; /* per column */
    bool *skip;     /* per column: not read by the program, not generated */
};

typedef struct NxCol {
    const char *name;
    NxField f;
} NxCol;

static const NxCol person_cols[] = {
    {"id", NXF_P_ID}, {"name", NXF_P_NAME}, {"emailaddress", NXF_P_EMAIL},
    {"email", NXF_P_EMAIL}, {"creditcard", NXF_P_CARD}, {"city", NXF_P_CITY},
    {"state", NXF_P_STATE}, {"datetime", NXF_P_TIME}, {"extra", NXF_P_EXTRA}, {NULL, 0}};
static const NxCol auction_cols[] = {
    {"id", NXF_A_ID}, {"itemname", NXF_A_ITEM}, {"description", NXF_A_DESC},
    {"initialbid", NXF_A_INITIAL}, {"reserve", NXF_A_RESERVE}, {"datetime", NXF_A_TIME},
    {"expires", NXF_A_EXPIRES}, {"seller", NXF_A_SELLER}, {"category", NXF_A_CATEGORY},
    {"extra", NXF_A_EXTRA}, {NULL, 0}};
static const NxCol bid_cols[] = {
    {"auction", NXF_B_AUCTION}, {"bidder", NXF_B_BIDDER}, {"price", NXF_B_PRICE},
    {"channel", NXF_B_CHANNEL}, {"url", NXF_B_URL}, {"datetime", NXF_B_TIME},
    {"extra", NXF_B_EXTRA}, {NULL, 0}};

/* name lower-cased without underscores into out[n] */
static void norm(const char *name, char *out, size_t n)
{
    size_t k = 0;
    for (; *name && k + 1 < n; name++)
        if (*name != '_')
            out[k++] = (char)(*name >= 'A' && *name <= 'Z' ? *name + 32 : *name);
    out[k] = 0;
}

static bool is_time(NxField f)
{
    return f == NXF_P_TIME || f == NXF_A_TIME || f == NXF_A_EXPIRES || f == NXF_B_TIME;
}

static int int_key(const cJSON *cfg, const char *key, int64_t lo, int64_t hi, int64_t *out,
                   const char *where, Err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, key);
    if (!v)
        return 0;
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < lo ||
        v->valuedouble > hi)
        return err_set(err, SL_ECONFIG, "%s: nexmark \"%s\" must be an integer in [%lld, %lld]",
                       where, key, (long long)lo, (long long)hi);
    *out = (int64_t)v->valuedouble;
    return 0;
}

static int parse(const cJSON *cfg, const char *table, NxConfig *c, NxKind *kind,
                 const char *where, Err *err)
{
    static const char *const keys[] = {
        "events", "seed", "rate", "base_time", "table", "person_proportion",
        "auction_proportion", "bid_proportion", "hot_auction_ratio", "hot_bidders_ratio",
        "hot_sellers_ratio", "num_active_people", "num_in_flight_auctions",
        "avg_person_byte_size", "avg_auction_byte_size", "avg_bid_byte_size", NULL};
    nx_config_default(c);
    if (cfg) {
        for (const cJSON *it = cfg->child; it; it = it->next) {
            const char *const *k = keys;
            while (*k && strcmp(*k, it->string))
                k++;
            if (!*k)
                return err_set(err, SL_ECONFIG,
                               "%s: unknown key \"%s\" in nexmark config (known: events, seed, "
                               "rate, base_time, table, person/auction/bid_proportion, "
                               "hot_auction/bidders/sellers_ratio, num_active_people, "
                               "num_in_flight_auctions, avg_person/auction/bid_byte_size)",
                               where, it->string);
        }
        const int64_t big = (int64_t)1 << 50, ms_max = (int64_t)253402300799000; /* 9999 */
        int64_t seed = 0;
        if (int_key(cfg, "events", 0, big, &c->events, where, err) ||
            int_key(cfg, "seed", 0, big, &seed, where, err) ||
            int_key(cfg, "rate", 1, big, &c->rate, where, err) ||
            int_key(cfg, "base_time", 0, ms_max, &c->base_ms, where, err) ||
            int_key(cfg, "person_proportion", 1, 1000, &c->prop[0], where, err) ||
            int_key(cfg, "auction_proportion", 1, 1000, &c->prop[1], where, err) ||
            int_key(cfg, "bid_proportion", 1, 1000, &c->prop[2], where, err) ||
            int_key(cfg, "hot_auction_ratio", 1, 1 << 20, &c->hot_auction_ratio, where, err) ||
            int_key(cfg, "hot_bidders_ratio", 1, 1 << 20, &c->hot_bidders_ratio, where, err) ||
            int_key(cfg, "hot_sellers_ratio", 1, 1 << 20, &c->hot_sellers_ratio, where, err) ||
            int_key(cfg, "num_active_people", 1, big, &c->active_people, where, err) ||
            int_key(cfg, "num_in_flight_auctions", 1, big, &c->inflight_auctions, where, err) ||
            int_key(cfg, "avg_person_byte_size", 0, 100000, &c->avg_size[0], where, err) ||
            int_key(cfg, "avg_auction_byte_size", 0, 100000, &c->avg_size[1], where, err) ||
            int_key(cfg, "avg_bid_byte_size", 0, 100000, &c->avg_size[2], where, err))
            return err->code;
        c->seed = (uint64_t)seed;
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(cfg, "table");
        if (t && !cJSON_IsString(t))
            return err_set(err, SL_ECONFIG, "%s: nexmark \"table\" must be \"person\", "
                           "\"auction\" or \"bid\"", where);
        if (t)
            table = t->valuestring;
    }
    if (!strcasecmp(table, "person"))
        *kind = NX_PERSON;
    else if (!strcasecmp(table, "auction"))
        *kind = NX_AUCTION;
    else if (!strcasecmp(table, "bid"))
        *kind = NX_BID;
    else
        return err_set(err, SL_ECONFIG, "%s: nexmark fills the tables person, auction and bid; "
                       "name one with \"table\" (this table is \"%s\")", where, table);
    return 0;
}

Datagen *nexmark_new(const cJSON *config, const char *table, int ncols, const char *const *names,
                     const SqlType *types, const char *where, Err *err)
{
    NxConfig c;
    NxKind kind = NX_BID;
    if (config && !cJSON_IsObject(config)) {
        err_set(err, SL_ECONFIG, "%s: nexmark config must be an object", where);
        return NULL;
    }
    if (parse(config, table, &c, &kind, where, err))
        return NULL;
    Arena *a = arena_new(0);
    Datagen *g = arena_zalloc(a, sizeof(*g));
    NexmarkSrc *nx = arena_zalloc(a, sizeof(*nx));
    g->arena = a;
    g->seed = c.seed;
    g->workers = 1;
    g->nplans = 1;
    g->ncols = ncols;
    g->plans = arena_zalloc(a, sizeof(Plan));
    g->plans[0] = (Plan){.limit = nx_rows(&c, kind), .rate = 0, .chunk = 10000, .f = NULL};
    g->nx = nx;
    nx->kind = kind;
    nx->ncols = ncols;
    nx->field = arena_zalloc(a, sizeof(NxField) * (size_t)(ncols > 0 ? ncols : 1));
    nx->skip = arena_zalloc(a, sizeof(bool) * (size_t)(ncols > 0 ? ncols : 1));
    const NxCol *cols = kind == NX_PERSON ? person_cols : kind == NX_AUCTION ? auction_cols
                                                                               : bid_cols;
    for (int i = 0; i < ncols; i++) {
        char n[64];
        norm(names[i], n, sizeof(n));
        const NxCol *m = cols;
        while (m->name && strcmp(m->name, n))
            m++;
        const char *tn = kind == NX_PERSON ? "person" : kind == NX_AUCTION ? "auction" : "bid";
        if (!m->name) {
            err_set(err, SL_ECONFIG, "%s: column \"%s\" is not a field of a Nexmark %s", where,
                    names[i], tn);
            goto fail;
        }
        TypeKind want = nx_field_is_text(m->f) ? TK_VARCHAR : is_time(m->f) ? TK_TIMESTAMP
                                                                             : TK_BIGINT;
        if (types[i].kind != want ||
            (want == TK_VARCHAR && types[i].len != VARCHAR_UNBOUNDED)) {
            err_set(err, SL_ECONFIG, "%s: column \"%s\" of a Nexmark %s must be %s", where,
                    names[i], tn, want == TK_VARCHAR ? "VARCHAR (no length)"
                                  : want == TK_TIMESTAMP ? "TIMESTAMP" : "BIGINT");
            goto fail;
        }
        nx->field[i] = m->f;
    }
    nx->gen = nx_gen_new(&c);
    if (!nx->gen)
        sl_panic("nexmark: out of memory");
    return g;
fail:
    arena_free(a);
    return NULL;
}

void nexmark_skip_unread(Datagen *g, const bool *read)
{
    for (int i = 0; i < g->nx->ncols; i++)
        g->nx->skip[i] = !read[i];
}

void nexmark_free(NexmarkSrc *nx)
{
    if (nx)
        nx_gen_free(nx->gen);
}

/* Strings packed into arena blocks (room for the longest value reserved). */
typedef struct TextOut {
    Arena *a;
    char *p;
    size_t left;
} TextOut;

static char *text_room(TextOut *o, size_t need, int64_t rows_left, size_t avg)
{
    if (!o->p || o->left < need) {
        size_t sz = (size_t)(rows_left < 1024 ? rows_left : 1024) * avg;
        sz = sz < need ? need : sz < 4096 ? 4096 : sz;
        o->p = arena_alloc(o->a, sz);
        o->left = sz;
    }
    return o->p;
}

void nexmark_fill(const NexmarkSrc *nx, int64_t start, int64_t count, Chunk *out, Arena *a)
{
    int64_t base = out->n;
    int64_t ev[NX_BLOCK];
    uint64_t ek[NX_BLOCK];
    TextOut to[64];
    int nto = nx->ncols < 64 ? nx->ncols : 64;
    for (int i = 0; i < nto; i++)
        to[i] = (TextOut){a, NULL, 0};
    for (int64_t b = 0; b < count; b += NX_BLOCK) {
        int64_t m = count - b < NX_BLOCK ? count - b : NX_BLOCK;
        nx_events(nx->gen, nx->kind, start + b, m, ev);
        nx_event_keys(nx->gen, ev, m, ek);
        for (int col = 0; col < nx->ncols; col++) {
            NxField f = nx->field[col];
            Vec *v = &out->col[col];
            int64_t at = base + b;
            if (nx->skip[col]) { /* NULL, or 0 / '' when NOT NULL */
                if (v->nul)
                    memset(v->nul + at, v->t.nullable, (size_t)m);
                if (v->s)
                    for (int64_t i = 0; i < m; i++)
                        v->s[at + i] = (Str){"", 0};
                else
                    memset(v->i + at, 0, (size_t)m * sizeof(int64_t));
                continue;
            }
            if (v->nul)
                memset(v->nul + at, 0, (size_t)m);
            if (nx_field_is_text(f)) {
                TextOut tmp = {a, NULL, 0};
                TextOut *o = col < nto ? &to[col] : &tmp;
                size_t max = nx_field_max(nx->gen, f);
                for (int64_t i = 0; i < m; i++) {
                    char *p = text_room(o, max, count - b - i, max / 2 + 8);
                    size_t n = nx_text(nx->gen, f, ev[i], p);
                    v->s[at + i] = (Str){p, (uint32_t)n};
                    o->p += n;
                    o->left -= n;
                }
            } else {
                nx_ints(nx->gen, f, ev, ek, m, is_time(f) ? 1000 : 1, v->i + at);
            }
        }
    }
    for (int64_t i = 0; i < count; i++)
        out->w[base + i] = 1;
    out->n += count;
}
