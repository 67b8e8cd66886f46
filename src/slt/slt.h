/*
 * slt/slt.h - what the sqllogictest runner's parts share: the database the
 * runner keeps between records (db.c: tables with their rows, views, index
 * names; DDL and DML statements applied to it) and how a query runs over
 * it through the engine (pipeline/oneshot.h).
 */
#ifndef SL_SLT_SLT_H
#define SL_SLT_SLT_H

#include "../base/buf.h"
#include "../base/err.h"
#include "../pipeline/oneshot.h"

typedef struct SltTable {
    char *name;
    int ncol;
    char **colnames;
    SqlType *types;
    int *pk;
    int npk;
    bool *uniq;  /* per column: UNIQUE (enforced by the runner) */
    bool append_only; /* WITH ('append_only' = 'true'): temporal joins may read it */
    int time_col;     /* its LATENESS column (a temporal join's time), -1 none */
    Arena *a;    /* owns the schema */
    Arena *ra;   /* owns rows and their strings */
    Chunk *rows; /* weights 1, duplicates as separate rows */
} SltTable;

typedef struct SltView {
    char *name;
    char *sql; /* CREATE VIEW ... text, or CREATE FUNCTION ... */
    bool is_func; /* a SQL function: compiled before each query, not a view */
    bool is_type; /* with is_func: a CREATE TYPE, also ahead of CREATE TABLE */
    char *decl;   /* with is_func: DECLARE RECURSIVE VIEW of this view (else NULL) */
} SltView;

typedef struct SltDb {
    SltTable *t;
    int nt, capt;
    SltView *v;
    int nv, capv;
    char **idx; /* index names (CREATE INDEX is accepted and ignored) */
    char **idx_table; /* ... and their tables (dropped with them) */
    int nidx, capidx;
    int workers;
} SltDb;

void db_init(SltDb *db, int workers);
void db_free(SltDb *db);
/* Apply one statement (no trailing ';'). 0 or SL_E* with err set. */
int db_exec(SltDb *db, const char *sql, Err *err);

/* How a query's inputs are fed. */
typedef struct SltFeed {
    bool incremental;   /* several steps with deletions and re-insertions */
    bool check_steps;   /* after every step compare with a from-scratch run */
    uint64_t seed;
    char *step_mismatch; /* set (malloc) when check_steps found a difference */
} SltFeed;

/* Run a SELECT over the database. */
int db_query(SltDb *db, const char *sql, SltFeed *feed, QResult *out, Err *err);

#endif
