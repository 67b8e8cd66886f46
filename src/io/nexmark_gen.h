/*
 * io/nexmark_gen.h - the Nexmark event generator's core (plain C, libc
 * only, so bench/probe/nexmark_probe.c compiles the same file): every
 * field of every event is a pure function of (configuration, event id e).
 *
 * Event e is a person, an auction or a bid by e mod T (T = the three
 * proportions' sum, 1 + 3 + 46 by default), ids and time come from e
 * arithmetically, and each field draws from its own random stream keyed
 * by (seed, e, field), so a table can generate only the columns it has and
 * any worker can generate any range. Rules, proportions and defaults are
 * those of ../../docs/nexmark.md (the reference generators').
 */
#ifndef SL_IO_NEXMARK_GEN_H
#define SL_IO_NEXMARK_GEN_H

#include <stddef.h>
#include <stdint.h>

typedef enum NxKind { NX_PERSON, NX_AUCTION, NX_BID } NxKind;

typedef enum NxField {
    NXF_P_ID, NXF_P_NAME, NXF_P_EMAIL, NXF_P_CARD, NXF_P_CITY, NXF_P_STATE, NXF_P_TIME,
    NXF_P_EXTRA,
    NXF_A_ID, NXF_A_ITEM, NXF_A_DESC, NXF_A_INITIAL, NXF_A_RESERVE, NXF_A_TIME, NXF_A_EXPIRES,
    NXF_A_SELLER, NXF_A_CATEGORY, NXF_A_EXTRA,
    NXF_B_AUCTION, NXF_B_BIDDER, NXF_B_PRICE, NXF_B_CHANNEL, NXF_B_URL, NXF_B_TIME, NXF_B_EXTRA,
    NXF_COUNT
} NxField;

typedef struct NxConfig {
    uint64_t seed;
    int64_t events;          /* 0 = unbounded */
    int64_t rate;            /* events per second of event time */
    int64_t base_ms;         /* event time of event 0, ms since 1970 */
    int64_t prop[3];         /* person, auction, bid proportions */
    int64_t hot_auction_ratio, hot_bidders_ratio, hot_sellers_ratio;
    int64_t active_people, inflight_auctions;
    int64_t avg_size[3];     /* person, auction, bid byte sizes */
} NxConfig;

typedef struct NxGen NxGen;

void nx_config_default(NxConfig *c);
/* A generator (the channel URL table is built here); NULL when out of memory. */
NxGen *nx_gen_new(const NxConfig *c);
void nx_gen_free(NxGen *g);
const NxConfig *nx_config(const NxGen *g);

/* Rows of kind k among the first c->events events (-1: unbounded). */
int64_t nx_rows(const NxConfig *c, NxKind k);
/* The event id of row `row` of kind k. */
int64_t nx_event_of(const NxConfig *c, NxKind k, int64_t row);
/* ev[i] = nx_event_of(config, k, row + i) for i < n. */
void nx_events(const NxGen *g, NxKind k, int64_t row, int64_t n, int64_t *ev);
NxKind nx_kind_of_field(NxField f);
/* Whether field f is text (else an integer; times are ms since 1970). */
int nx_field_is_text(NxField f);
/* Longest text field f can produce. */
size_t nx_field_max(const NxGen *g, NxField f);
/* Field f of event e (which must be of f's kind). */
int64_t nx_int(const NxGen *g, NxField f, int64_t e);
/* The keys of events ev[0..n) into ek (what nx_ints draws from). */
void nx_event_keys(const NxGen *g, const int64_t *ev, int64_t n, uint64_t *ek);
/* out[i] = nx_int(g, f, ev[i]) * mul for i < n, ek from nx_event_keys. */
void nx_ints(const NxGen *g, NxField f, const int64_t *ev, const uint64_t *ek, int64_t n,
             int64_t mul, int64_t *out);
/* Writes the text at out (room for nx_field_max), returns its length. */
size_t nx_text(const NxGen *g, NxField f, int64_t e, char *out);

#endif
