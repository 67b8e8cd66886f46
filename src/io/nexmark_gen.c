/*
 * io/nexmark_gen.c - the Nexmark event generator's core: the fields of
 * event e computed from (configuration, e) alone. nexmark.c calls it from
 * the workers (a column at a time for a range of rows); the plain-C probe
 * bench/probe/nexmark_probe.c compiles this file as it is.
 *
 * Randomness: event e has the key mix(seed, e); field f draws from the
 * stream (key, f) with splitmix64 steps, so fields are independent of one
 * another and of which other fields are generated. Strings take 4
 * characters per 64-bit draw (16 bits each); padding is cut at a random
 * offset from 64 KiB of random letters drawn once from the seed.
 * Rules follow the reference generators (docs/nexmark.md): ids from e, hot
 * ids in batches of 100, the +10 lead of random person and auction
 * choices, log-uniform prices, Flink's channels and URLs (hot channel with
 * probability 1/2; channel-N otherwise, N < 10000, whose URL and whether it
 * carries &channel_id= are fixed per N by the seed).
 */
#include "nexmark_gen.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GOLD 0x9E3779B97F4A7C15ULL
#define NX_FIRST_ID 1000
#define NX_HOT_BATCH 100
#define NX_ID_LEAD 10
#define NX_CHANNELS 10000
#define NX_URL_MAX 96
#define NX_LETTERS 65536 /* letter buffer (a power of 2) before its tail */

/* Division of a non-negative int64 by a divisor fixed at start-up: a
   multiply-high by m = floor((2^64 - 1) / d) gives the quotient or one
   less (for n < 2^63), and one comparison corrects it; the same results
   as `/` and `%` at a fraction of a hardware division's cost. */
typedef struct Div {
    uint64_t d, m;
} Div;

static Div div_of(int64_t d)
{
    return (Div){(uint64_t)d, UINT64_MAX / (uint64_t)d};
}

static inline int64_t div_q(Div v, int64_t n)
{
    uint64_t q = (uint64_t)(((unsigned __int128)(uint64_t)n * v.m) >> 64);
    if ((uint64_t)n - q * v.d >= v.d)
        q++;
    return (int64_t)q;
}

struct NxGen {
    NxConfig c;
    Div dT, drate;    /* by T and by c.rate */
    uint64_t key;     /* mixed seed */
    int64_t T;        /* events per epoch */
    int64_t horizon;  /* events ahead that set an auction's length */
    char *urls;       /* NX_CHANNELS + 4 URLs, packed */
    uint32_t *url_at; /* where URL i starts in urls; url_at[i + 1] - url_at[i] long */
    char *letters;    /* NX_LETTERS + the longest padding of random a-z */
    char (*names)[16]; /* "channel-N" for N < NX_CHANNELS, then the 4 hot names */
    uint8_t *name_len;
};

static const char *const first_names[] = {"Peter", "Paul", "Luke", "John", "Saul", "Vicky",
                                          "Kate", "Julie", "Sarah", "Deiter", "Walter"};
static const char *const last_names[] = {"Shultz", "Abrams", "Spencer", "White", "Bartels",
                                         "Walton", "Smith", "Jones", "Noris"};
static const char *const cities[] = {"Phoenix", "Los Angeles", "San Francisco", "Boise",
                                     "Portland", "Bend", "Redmond", "Seattle", "Kent",
                                     "Cheyenne"};
static const char *const states[] = {"AZ", "CA", "ID", "OR", "WA", "WY"};
static const char *const hot_channels[] = {"Google", "Facebook", "Baidu", "Apple"};

static inline uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static inline uint64_t next(uint64_t *st)
{
    *st += GOLD;
    return mix64(*st);
}

static inline uint64_t below(uint64_t *st, uint64_t n)
{
    return (uint64_t)(((unsigned __int128)next(st) * n) >> 64);
}

/* The key of event e: what every field's stream starts from. */
static inline uint64_t event_key(const NxGen *g, int64_t e)
{
    return mix64(g->key ^ ((uint64_t)e * GOLD));
}

/* The stream of field f (or any small tag) of event e whose key is ek. */
static inline uint64_t stream_k(uint64_t ek, int f)
{
    return ek ^ ((uint64_t)(f + 1) << 56);
}

/* The stream of field f (or any small tag) of event e. */
static inline uint64_t stream(const NxGen *g, int64_t e, int f)
{
    return stream_k(event_key(g, e), f);
}

void nx_config_default(NxConfig *c)
{
    *c = (NxConfig){.seed = 0, .events = 100000000, .rate = 10000, .base_ms = 0,
                    .prop = {1, 3, 46}, .hot_auction_ratio = 2, .hot_bidders_ratio = 4,
                    .hot_sellers_ratio = 4, .active_people = 1000, .inflight_auctions = 100,
                    .avg_size = {200, 500, 100}};
}

/* ---------------------------------------------------------- ids and time */

static int64_t last_person(const NxGen *g, int64_t e)
{
    int64_t epoch = div_q(g->dT, e), off = e - epoch * g->T;
    if (off > g->c.prop[0] - 1)
        off = g->c.prop[0] - 1;
    return epoch * g->c.prop[0] + off;
}

static int64_t last_auction(const NxGen *g, int64_t e)
{
    int64_t epoch = div_q(g->dT, e), off = e - epoch * g->T, pp = g->c.prop[0],
            ap = g->c.prop[1];
    if (off < pp) {
        epoch--;
        off = ap - 1;
    } else if (off >= pp + ap) {
        off = ap - 1;
    } else {
        off -= pp;
    }
    int64_t id = epoch * ap + off;
    return id < 0 ? 0 : id;
}

static int64_t time_ms(const NxGen *g, int64_t e)
{
    if (e >= 0 && e < INT64_MAX / 1000) /* (a 128-bit division costs several times more) */
        return g->c.base_ms + div_q(g->drate, e * 1000);
    return g->c.base_ms + (int64_t)((__int128)e * 1000 / g->c.rate);
}

static int64_t random_person(const NxGen *g, int64_t e, uint64_t *st)
{
    int64_t n = last_person(g, e) + 1;
    int64_t active = n < g->c.active_people ? n : g->c.active_people;
    return n - active + (int64_t)below(st, (uint64_t)(active + NX_ID_LEAD));
}

static int64_t random_auction(const NxGen *g, int64_t e, uint64_t *st)
{
    int64_t max = last_auction(g, e), min = max - g->c.inflight_auctions;
    if (min < 0)
        min = 0;
    return min + (int64_t)below(st, (uint64_t)(max - min + 1 + NX_ID_LEAD));
}

static int64_t price(uint64_t *st)
{
    double u = (double)(next(st) >> 11) * 0x1.0p-53;
    return llround(exp(u * 6.0 * M_LN10) * 100.0);
}

/* ---------------------------------------------------------------- text */

/* Beam's nextString(max, special): 3 + uniform[0, max-3) characters, each
   `special` with probability 1/13, else a-z; spaces trimmed at both ends. */
static size_t rand_str(uint64_t *st, int max, char special, char *out)
{
    size_t len = 3 + (size_t)below(st, (uint64_t)(max - 3)), n = 0;
    while (n < len) {
        uint64_t r = next(st);
        for (int k = 0; k < 4 && n < len; k++, r >>= 16) {
            unsigned x = (unsigned)(((r & 0xFFFF) * 338) >> 16); /* 26 * 13 */
            out[n++] = x < 26 ? special : (char)('a' + x % 26);
        }
    }
    if (special != ' ')
        return n;
    size_t s = 0;
    while (s < n && out[s] == ' ')
        s++;
    while (n > s && out[n - 1] == ' ')
        n--;
    if (s)
        memmove(out, out + s, n - s);
    return n - s;
}

static size_t put(char *out, const char *s)
{
    size_t n = strlen(s);
    memcpy(out, s, n);
    return n;
}

/* Padding toward avg bytes when `used` are taken: d = avg - used, length
   d - delta + uniform[0, 2 delta) with delta = round(d / 5), lowercase
   letters cut at a random offset from the generator's letter buffer (as
   Flink cuts them from a random string built once). */
static size_t extra(const NxGen *g, uint64_t *st, int64_t avg, int64_t used, char *out)
{
    int64_t d = avg - used;
    if (d <= 0)
        return 0;
    int64_t delta = llround(0.2 * (double)d);
    uint64_t r = next(st);
    int64_t spread = delta > 0 ? (int64_t)((r >> 32) % (uint64_t)(2 * delta)) : 0;
    size_t len = (size_t)(d - delta + spread);
    memcpy(out, g->letters + (r & (NX_LETTERS - 1)), len);
    return len;
}

/* "https://www.nexmark.com/<s>/<s>/<s>/item.htm?query=1" from stream st. */
static size_t base_url(uint64_t *st, char *out)
{
    size_t n = put(out, "https://www.nexmark.com");
    for (int k = 0; k < 3; k++) {
        out[n++] = '/';
        n += rand_str(st, 5, '_', out + n);
    }
    return n + put(out + n, "/item.htm?query=1");
}

NxGen *nx_gen_new(const NxConfig *c)
{
    NxGen *g = calloc(1, sizeof(*g));
    if (!g)
        return NULL;
    g->c = *c;
    g->key = mix64(c->seed ^ 0x4E45584D41524BULL);
    g->T = c->prop[0] + c->prop[1] + c->prop[2];
    g->dT = div_of(g->T);
    g->drate = div_of(c->rate);
    g->horizon = c->inflight_auctions * g->T / c->prop[1];
    g->urls = malloc((size_t)(NX_CHANNELS + 4) * NX_URL_MAX);
    g->url_at = malloc((NX_CHANNELS + 5) * sizeof(uint32_t));
    g->names = malloc((NX_CHANNELS + 4) * sizeof(*g->names));
    g->name_len = malloc(NX_CHANNELS + 4);
    size_t pad = 0;
    for (int k = 0; k < 3; k++)
        if ((size_t)c->avg_size[k] * 6 / 5 > pad)
            pad = (size_t)c->avg_size[k] * 6 / 5; /* the longest padding */
    size_t nlet = NX_LETTERS + pad + 8;
    g->letters = malloc(nlet);
    if (g->letters) {
        uint64_t st = stream(g, -1 - NX_CHANNELS - 4, 0);
        for (size_t i = 0; i < nlet; i++)
            g->letters[i] = (char)('a' + below(&st, 26));
    }
    if (!g->urls || !g->url_at || !g->names || !g->name_len || !g->letters) {
        nx_gen_free(g);
        return NULL;
    }
    g->url_at[0] = 0;
    for (int64_t i = 0; i < NX_CHANNELS + 4; i++) {
        uint64_t st = stream(g, -1 - i, 0);
        char *u = g->urls + g->url_at[i];
        size_t n = base_url(&st, u);
        if (i < NX_CHANNELS && below(&st, 10) > 0) {
            uint32_t v = (uint32_t)i, r = 0;
            for (int b = 0; b < 32; b++, v >>= 1)
                r = (r << 1) | (v & 1);
            n += (size_t)snprintf(u + n, NX_URL_MAX - n, "&channel_id=%lld",
                                  llabs((long long)(int32_t)r));
        }
        g->url_at[i + 1] = g->url_at[i] + (uint32_t)n;
        int nl = i < NX_CHANNELS ? snprintf(g->names[i], 16, "channel-%d", (int)i)
                                 : snprintf(g->names[i], 16, "%s", hot_channels[i - NX_CHANNELS]);
        g->name_len[i] = (uint8_t)nl;
    }
    return g;
}

void nx_gen_free(NxGen *g)
{
    if (!g)
        return;
    free(g->urls);
    free(g->url_at);
    free(g->names);
    free(g->letters);
    free(g->name_len);
    free(g);
}

const NxConfig *nx_config(const NxGen *g) { return &g->c; }

int64_t nx_rows(const NxConfig *c, NxKind k)
{
    if (c->events <= 0)
        return -1;
    int64_t T = c->prop[0] + c->prop[1] + c->prop[2], full = c->events / T, rem = c->events % T;
    int64_t before = k == NX_PERSON ? 0 : k == NX_AUCTION ? c->prop[0] : c->prop[0] + c->prop[1];
    int64_t part = rem - before;
    part = part < 0 ? 0 : part > c->prop[k] ? c->prop[k] : part;
    return full * c->prop[k] + part;
}

int64_t nx_event_of(const NxConfig *c, NxKind k, int64_t row)
{
    int64_t T = c->prop[0] + c->prop[1] + c->prop[2];
    int64_t before = k == NX_PERSON ? 0 : k == NX_AUCTION ? c->prop[0] : c->prop[0] + c->prop[1];
    return row / c->prop[k] * T + before + row % c->prop[k];
}

void nx_events(const NxGen *g, NxKind k, int64_t row, int64_t n, int64_t *ev)
{
    int64_t p = g->c.prop[k], q = row / p, r = row % p;
    int64_t before = k == NX_PERSON ? 0 : k == NX_AUCTION ? g->c.prop[0]
                                                          : g->c.prop[0] + g->c.prop[1];
    for (int64_t i = 0; i < n; i++) {
        ev[i] = q * g->T + before + r;
        if (++r == p) {
            r = 0;
            q++;
        }
    }
}

NxKind nx_kind_of_field(NxField f)
{
    return f <= NXF_P_EXTRA ? NX_PERSON : f <= NXF_A_EXTRA ? NX_AUCTION : NX_BID;
}

int nx_field_is_text(NxField f)
{
    switch (f) {
    case NXF_P_NAME: case NXF_P_EMAIL: case NXF_P_CARD: case NXF_P_CITY: case NXF_P_STATE:
    case NXF_P_EXTRA: case NXF_A_ITEM: case NXF_A_DESC: case NXF_A_EXTRA: case NXF_B_CHANNEL:
    case NXF_B_URL: case NXF_B_EXTRA:
        return 1;
    default:
        return 0;
    }
}

size_t nx_field_max(const NxGen *g, NxField f)
{
    switch (f) {
    case NXF_P_NAME: case NXF_P_EMAIL: case NXF_P_CARD: case NXF_P_CITY: case NXF_P_STATE:
    case NXF_A_ITEM: case NXF_B_CHANNEL:
        return 32;
    case NXF_A_DESC: return 100;
    case NXF_B_URL: return NX_URL_MAX;
    case NXF_P_EXTRA: return (size_t)g->c.avg_size[0] * 6 / 5 + 10;
    case NXF_A_EXTRA: return (size_t)g->c.avg_size[1] * 6 / 5 + 10;
    case NXF_B_EXTRA: return (size_t)g->c.avg_size[2] * 6 / 5 + 10;
    default: return 0;
    }
}

/* The channel draw of bid e: 0..3 a hot channel, else 4 + N. */
static int64_t channel_of(const NxGen *g, int64_t e)
{
    uint64_t st = stream(g, e, NXF_B_CHANNEL);
    uint64_t r = next(&st);
    if (r >> 63)
        return (int64_t)((r >> 1) & 3);
    return 4 + (int64_t)(((r & 0xFFFFFFFFu) * NX_CHANNELS) >> 32);
}

/* Field f of event e whose key is ek. */
static inline __attribute__((always_inline)) int64_t int_of(const NxGen *g, NxField f,
                                                             int64_t e, uint64_t ek)
{
    uint64_t st = stream_k(ek, f);
    switch (f) {
    case NXF_P_ID: return last_person(g, e) + NX_FIRST_ID;
    case NXF_A_ID: return last_auction(g, e) + NX_FIRST_ID;
    case NXF_P_TIME: case NXF_A_TIME: case NXF_B_TIME: return time_ms(g, e);
    case NXF_A_INITIAL: return price(&st);
    case NXF_A_RESERVE: {
        uint64_t st0 = stream_k(ek, NXF_A_INITIAL);
        return price(&st0) + price(&st);
    }
    case NXF_A_EXPIRES: {
        int64_t now = time_ms(g, e), h = time_ms(g, e + g->horizon) - now;
        return now + 1 + (int64_t)below(&st, (uint64_t)(2 * h > 1 ? 2 * h : 1));
    }
    case NXF_A_SELLER:
        if (below(&st, (uint64_t)g->c.hot_sellers_ratio) > 0)
            return last_person(g, e) / NX_HOT_BATCH * NX_HOT_BATCH + NX_FIRST_ID;
        return random_person(g, e, &st) + NX_FIRST_ID;
    case NXF_A_CATEGORY: return 10 + (int64_t)below(&st, 5);
    case NXF_B_AUCTION:
        if (below(&st, (uint64_t)g->c.hot_auction_ratio) > 0)
            return last_auction(g, e) / NX_HOT_BATCH * NX_HOT_BATCH + NX_FIRST_ID;
        return random_auction(g, e, &st) + NX_FIRST_ID;
    case NXF_B_BIDDER:
        if (below(&st, (uint64_t)g->c.hot_bidders_ratio) > 0)
            return last_person(g, e) / NX_HOT_BATCH * NX_HOT_BATCH + 1 + NX_FIRST_ID;
        return random_person(g, e, &st) + NX_FIRST_ID;
    case NXF_B_PRICE: return price(&st);
    default: return 0;
    }
}

int64_t nx_int(const NxGen *g, NxField f, int64_t e)
{
    return int_of(g, f, e, event_key(g, e));
}

void nx_event_keys(const NxGen *g, const int64_t *ev, int64_t n, uint64_t *ek)
{
    for (int64_t i = 0; i < n; i++)
        ek[i] = event_key(g, ev[i]);
}

/* One loop per field (the switch out of the loop). */
#define INTS(F)                                                                                    \
    case F:                                                                                        \
        for (int64_t i = 0; i < n; i++)                                                            \
            out[i] = int_of(g, F, ev[i], ek[i]) * mul;                                             \
        return;

void nx_ints(const NxGen *g, NxField f, const int64_t *ev, const uint64_t *ek, int64_t n,
             int64_t mul, int64_t *out)
{
    switch (f) {
    INTS(NXF_P_ID) INTS(NXF_A_ID) INTS(NXF_P_TIME) INTS(NXF_A_TIME) INTS(NXF_B_TIME)
    INTS(NXF_A_INITIAL) INTS(NXF_A_RESERVE) INTS(NXF_A_EXPIRES) INTS(NXF_A_SELLER)
    INTS(NXF_A_CATEGORY) INTS(NXF_B_AUCTION) INTS(NXF_B_BIDDER) INTS(NXF_B_PRICE)
    default:
        for (int64_t i = 0; i < n; i++)
            out[i] = 0;
    }
}

size_t nx_text(const NxGen *g, NxField f, int64_t e, char *out)
{
    uint64_t st = stream(g, e, f);
    char tmp[128];
    switch (f) {
    case NXF_P_NAME: {
        size_t n = put(out, first_names[below(&st, 11)]);
        out[n++] = ' ';
        return n + put(out + n, last_names[below(&st, 9)]);
    }
    case NXF_P_EMAIL: {
        size_t n = rand_str(&st, 7, ' ', out);
        out[n++] = '@';
        n += rand_str(&st, 5, ' ', out + n);
        return n + put(out + n, ".com");
    }
    case NXF_P_CARD: {
        size_t n = 0;
        for (int k = 0; k < 4; k++) {
            unsigned d = (unsigned)below(&st, 10000);
            if (k)
                out[n++] = ' ';
            for (int j = 3; j >= 0; j--, d /= 10)
                out[n + (size_t)j] = (char)('0' + d % 10);
            n += 4;
        }
        return n;
    }
    case NXF_P_CITY: return put(out, cities[below(&st, 10)]);
    case NXF_P_STATE: return put(out, states[below(&st, 6)]);
    case NXF_P_EXTRA: {
        int64_t used = 8;
        for (NxField k = NXF_P_NAME; k <= NXF_P_STATE; k++)
            used += (int64_t)nx_text(g, k, e, tmp);
        return extra(g, &st, g->c.avg_size[0], used, out);
    }
    case NXF_A_ITEM: return rand_str(&st, 20, ' ', out);
    case NXF_A_DESC: return rand_str(&st, 100, ' ', out);
    case NXF_A_EXTRA: {
        int64_t used = 8 + (int64_t)nx_text(g, NXF_A_ITEM, e, tmp) +
                       (int64_t)nx_text(g, NXF_A_DESC, e, tmp) + 40;
        return extra(g, &st, g->c.avg_size[1], used, out);
    }
    case NXF_B_CHANNEL: {
        int64_t ch = channel_of(g, e), i = ch < 4 ? NX_CHANNELS + ch : ch - 4;
        memcpy(out, g->names[i], 16);
        return g->name_len[i];
    }
    case NXF_B_URL: {
        int64_t ch = channel_of(g, e), i = ch < 4 ? NX_CHANNELS + ch : ch - 4;
        uint32_t at = g->url_at[i], n = g->url_at[i + 1] - at;
        memcpy(out, g->urls + at, n);
        return n;
    }
    case NXF_B_EXTRA: return extra(g, &st, g->c.avg_size[2], 32, out);
    default: return 0;
    }
}
