/*
 * io/datagen_int.h - what datagen_config.c and datagen.c share: the
 * validated generator (struct Datagen: plans of per-column Fields) that
 * the config file builds from the connector's JSON and the generation file
 * fills Chunks from.
 *
 * datagen_new (datagen.c) takes an arena, has datagen_config_parse turn
 * the JSON into plans and Fields (everything a message can name is checked
 * there, nothing random is drawn), then prepares what generation needs:
 * each column's draw streams from the seed, zipf alias tables, word lists.
 */
#ifndef SL_IO_DATAGEN_INT_H
#define SL_IO_DATAGEN_INT_H

#include "../base/arena.h"
#include "datagen.h"
#include "words.h"

typedef __int128 i128;
typedef unsigned __int128 u128;

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

/* Fill loop of a column, chosen once by the config. */
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
    uint64_t n;    /* ranks 1..n; 0 when the column draws no zipf ranks */
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
    uint64_t key;   /* value draws (set by datagen_new) */
    uint64_t nkey;  /* NULL draws (set by datagen_new) */
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
    const WordList *wl; /* word strategies (set by datagen_new) */
    size_t wmax;    /* longest word in wl */
    Zipf z;         /* n and e from the config, the rest by datagen_new */
    Values v;
} Field;

typedef struct Plan {
    int64_t limit; /* -1 = unlimited */
    double rate;   /* 0 = unlimited */
    int64_t chunk;
    Field *f;      /* one per column */
} Plan;

/* A nexmark generator (nexmark.c): a Datagen of one plan whose rows it
   fills itself. */
typedef struct NexmarkSrc NexmarkSrc;
void nexmark_fill(const NexmarkSrc *nx, int64_t start, int64_t count, Chunk *out, Arena *a);
void nexmark_free(NexmarkSrc *nx);

struct Datagen {
    Arena *arena; /* owns everything below, including this struct */
    NexmarkSrc *nx; /* a nexmark table's generator (plans[0].f unused), else NULL */
    uint64_t seed;
    int workers;
    int nplans;
    Plan *plans;
    int ncols;
};

/* A double rounded to REAL when real (values and generated REALs alike). */
static inline double as_real(double v, bool real) { return real ? (double)(float)v : v; }

/*
 * Validate config (NULL = all defaults) for a table of ncols columns
 * (names[], types[]) into g (zeroed, g->arena set; Fields and values are
 * allocated from it). `where` names the connector in messages. 0, or
 * SL_ECONFIG with err set to the first problem found.
 */
int datagen_config_parse(Datagen *g, const cJSON *config, int ncols, const char *const *names,
                         const SqlType *types, const char *where, Err *err);

#endif
