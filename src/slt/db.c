/*
 * slt/db.c - the database of the sqllogictest runner: the tables' rows,
 * the views' definitions and index names, as the file's `statement`
 * records build them, and the queries run over them by the engine.
 *
 * DDL: CREATE TABLE is compiled by the engine's own front end (so its
 * errors are the engine's); SQLite's INTEGER is 64-bit and its REAL/FLOAT
 * are doubles, so columns get BIGINT and DOUBLE. CREATE VIEW is kept as
 * text and compiled ahead of every later query (and checked when created);
 * so is CREATE [OR REPLACE] FUNCTION (a SQL function; its body may not hold
 * a ';', where the runner splits statements). CREATE/DROP INDEX and
 * REINDEX only check names: an incremental engine needs no indexes.
 *
 * DML: the runner holds each table's rows; INSERT ... VALUES with plain
 * literals is converted here; everything with expressions (VALUES with
 * expressions, INSERT ... SELECT, DELETE ... WHERE, UPDATE ... SET) runs as
 * a SELECT through the engine, whose result becomes the new rows, so
 * expression semantics are the engine's. PRIMARY KEY uniqueness is checked
 * (a violating statement fails and changes nothing); INSERT OR REPLACE and
 * REPLACE replace the rows with the same key.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../base/mem.h"
#include "../base/vec.h"
#include "../circuit/circuit.h"
#include "../sql/sql.h"
#include "../expr/text.h"
#include "../zset/key.h"
#include "slt.h"

/* ---- a small scanner for statement text ---- */

static void ws(const char **s)
{
    while (isspace((unsigned char)**s))
        (*s)++;
}

static bool is_ident_char(int c) { return isalnum(c) || c == '_' || c == '$'; }

/* Accept keyword w (case-insensitive, whole word). */
static bool kw(const char **s, const char *w)
{
    ws(s);
    size_t n = strlen(w);
    if (strncasecmp(*s, w, n) || is_ident_char((unsigned char)(*s)[n]))
        return false;
    *s += n;
    return true;
}

/* An identifier (bare, "quoted", [bracketed] or `quoted`) into out. */
static bool ident(const char **s, char *out, size_t cap)
{
    ws(s);
    const char *p = *s;
    size_t n = 0;
    char close = 0;
    if (*p == '"' || *p == '[' || *p == '`') {
        close = *p == '[' ? ']' : *p;
        p++;
        while (*p && *p != close && n + 1 < cap)
            out[n++] = *p++;
        if (*p != close)
            return false;
        p++;
    } else {
        if (!is_ident_char((unsigned char)*p))
            return false;
        while (is_ident_char((unsigned char)*p) && n + 1 < cap)
            out[n++] = *p++;
    }
    out[n] = 0;
    *s = p;
    return true;
}

static bool op(const char **s, char c)
{
    ws(s);
    if (**s != c)
        return false;
    (*s)++;
    return true;
}

/* Position of keyword w at parenthesis depth 0 outside strings, or NULL. */
static const char *find_top_kw(const char *s, const char *w)
{
    int depth = 0;
    size_t n = strlen(w);
    for (const char *p = s; *p; p++) {
        if (*p == '\'' || *p == '"') {
            char q = *p;
            for (p++; *p && *p != q; p++)
                ;
            if (!*p)
                return NULL;
            continue;
        }
        if (*p == '(')
            depth++;
        else if (*p == ')')
            depth--;
        else if (depth == 0 && !strncasecmp(p, w, n) && !is_ident_char((unsigned char)p[n]) &&
                 (p == s || !is_ident_char((unsigned char)p[-1])))
            return p;
    }
    return NULL;
}

/* Split s at top-level commas (up to end or `stop`); returns count. */
static int split_commas(const char *s, const char *stop, const char **start, const char **end,
                        int cap)
{
    int depth = 0, n = 0;
    const char *b = s, *p;
    for (p = s; *p && p != stop; p++) {
        if (*p == '\'' || *p == '"') {
            char q = *p;
            for (p++; *p && *p != q; p++)
                ;
            if (!*p)
                break;
            continue;
        }
        if (*p == '(' || *p == '[') /* ARRAY[...] too */
            depth++;
        else if (*p == ')' || *p == ']')
            depth--;
        else if (*p == ',' && depth == 0) {
            if (n < cap) {
                start[n] = b;
                end[n] = p;
            }
            n++;
            b = p + 1;
        }
    }
    if (n < cap) {
        start[n] = b;
        end[n] = p;
    }
    return n + 1;
}

/* ---- tables ---- */

void db_init(SltDb *db, int workers)
{
    memset(db, 0, sizeof(*db));
    db->workers = workers;
}

static void table_free(SltTable *t)
{
    arena_free(t->a);
    arena_free(t->ra);
    memset(t, 0, sizeof(*t));
}

void db_free(SltDb *db)
{
    for (int i = 0; i < db->nt; i++)
        table_free(&db->t[i]);
    for (int i = 0; i < db->nv; i++) {
        sl_free(db->v[i].name);
        sl_free(db->v[i].sql);
        sl_free(db->v[i].decl);
    }
    for (int i = 0; i < db->nidx; i++) {
        sl_free(db->idx[i]);
        sl_free(db->idx_table[i]);
    }
    sl_free(db->idx_table);
    sl_free(db->t);
    sl_free(db->v);
    sl_free(db->idx);
    memset(db, 0, sizeof(*db));
}

static SltTable *find_table(SltDb *db, const char *name)
{
    for (int i = 0; i < db->nt; i++)
        if (!strcasecmp(db->t[i].name, name))
            return &db->t[i];
    return NULL;
}

static int find_view(SltDb *db, const char *name)
{
    for (int i = 0; i < db->nv; i++)
        if (!db->v[i].is_func && !strcasecmp(db->v[i].name, name))
            return i;
    return -1;
}

static Chunk *new_rows(SltTable *t, Arena *a, int64_t cap)
{
    return chunk_new(a, t->ncol, t->types, cap < 16 ? 16 : cap);
}

/* Room for one more row. */
static void grow(SltTable *t)
{
    if (t->rows->n < t->rows->cap)
        return;
    Chunk *c = new_rows(t, t->ra, t->rows->cap * 2);
    for (int64_t i = 0; i < t->rows->n; i++)
        chunk_append_row(c, t->rows, i);
    t->rows = c;
}

/* Store the value in row r of v (any type) into column j of row `row` of
   dst, converted to the column's type like SQLite's column affinity. */
static int put_value(const SltTable *t, Chunk *dst, Arena *a, int j, int64_t row, const Vec *v,
                     int64_t r, Err *err)
{
    Vec *d = &dst->col[j];
    if (vec_is_null(v, r)) {
        if (!d->nul)
            return err_set(err, SL_EDATA, "NOT NULL constraint failed: %s.%s", t->name,
                           t->colnames[j]);
        vec_set_null(d, row);
        return 0;
    }
    if (d->nul)
        d->nul[row] = 0;
    TypeKind sk = v->t.kind, dk = d->t.kind;
    if (sk == dk && v->t.scale == d->t.scale && !d->x != !v->x) {
        /* DECIMALs of the same scale, one wide and one not: through text */
    } else if (sk == dk && v->t.scale == d->t.scale &&
               (sk != TK_ARRAY || (v->t.elem == d->t.elem && v->t.prec == d->t.prec)) &&
               ((sk != TK_ROW && sk != TK_MAP && sk != TK_ARRAY) || v->t.len == d->t.len)) {
        if (d->x)
            d->x[row] = v->x[r];
        else if (d->i)
            d->i[row] = v->i[r];
        else if (d->f)
            d->f[row] = v->f[r];
        else
            d->s[row] = (Str){arena_strndup(a, v->s[r].p, v->s[r].n), v->s[r].n};
        return 0;
    }
    if (d->f && v->i && type_is_integer(sk)) {
        d->f[row] = (double)v->i[r];
        return 0;
    }
    if (d->i && type_is_integer(dk) && v->i && type_is_integer(sk)) {
        d->i[row] = v->i[r];
        return 0;
    }
    if (d->i && type_is_integer(dk) && v->f && v->f[r] == (double)(int64_t)v->f[r]) {
        d->i[row] = (int64_t)v->f[r];
        return 0;
    }
    /* through text */
    Buf b = BUF_INIT;
    text_format_vec(v, r, &b);
    int rc = text_parse_vec(d, row, (const char *)b.p, b.n, a, err);
    buf_free(&b);
    return rc;
}

/* Do two rows of c agree on the table's key columns? */
static bool same_key(const SltTable *t, const Chunk *a, int64_t x, const Chunk *b, int64_t y)
{
    for (int k = 0; k < t->npk; k++) {
        const Vec *u = &a->col[t->pk[k]], *v = &b->col[t->pk[k]];
        if (u->x ? u->x[x] != v->x[y]
            : u->i ? u->i[x] != v->i[y]
                 : u->f ? u->f[x] != v->f[y]
                        : (u->s[x].n != v->s[y].n || memcmp(u->s[x].p, v->s[y].p, u->s[x].n)))
            return false;
    }
    return true;
}

static bool same_value(const Vec *u, int64_t x, int64_t y)
{
    if (vec_is_null(u, x) || vec_is_null(u, y))
        return false; /* NULLs never collide in UNIQUE */
    return u->x ? u->x[x] == u->x[y]
           : u->i ? u->i[x] == u->i[y]
                : u->f ? u->f[x] == u->f[y]
                       : u->s[x].n == u->s[y].n && !memcmp(u->s[x].p, u->s[y].p, u->s[x].n);
}

/* Check the PRIMARY KEY and UNIQUE columns of rows c (rows from `from`
   against all). */
static int check_pk(const SltTable *t, const Chunk *c, int64_t from, Err *err)
{
    for (int j = 0; j < t->ncol; j++)
        if (t->uniq[j])
            for (int64_t i = from; i < c->n; i++)
                for (int64_t k = 0; k < i; k++)
                    if (same_value(&c->col[j], i, k))
                        return err_set(err, SL_EDATA, "UNIQUE constraint failed: %s.%s",
                                       t->name, t->colnames[j]);
    if (!t->npk)
        return 0;
    for (int64_t i = from; i < c->n; i++)
        for (int64_t j = 0; j < i; j++)
            if (same_key(t, c, i, c, j))
                return err_set(err, SL_EDATA, "UNIQUE constraint failed: %s.%s", t->name,
                               t->colnames[t->pk[0]]);
    return 0;
}

/* Replace the table's rows with res (converted to the column types). */
static int set_rows(SltTable *t, const QResult *res, Err *err)
{
    if (res->ncol != t->ncol)
        return err_set(err, SL_ESEMANTIC, "%d values for %d columns", res->ncol, t->ncol);
    Arena *a = arena_new(1 << 14);
    Chunk *c = new_rows(t, a, res->rows->n);
    for (int64_t i = 0; i < res->rows->n; i++) {
        for (int j = 0; j < t->ncol; j++)
            if (put_value(t, c, a, j, i, &res->rows->col[j], i, err)) {
                arena_free(a);
                return err->code;
            }
        c->w[i] = 1;
        c->n++;
    }
    if (check_pk(t, c, 0, err)) {
        arena_free(a);
        return err->code;
    }
    arena_free(t->ra);
    t->ra = a;
    t->rows = c;
    return 0;
}

static QInput *inputs(SltDb *db)
{
    QInput *in = sl_calloc((size_t)(db->nt ? db->nt : 1), sizeof(QInput));
    for (int i = 0; i < db->nt; i++) {
        SltTable *t = &db->t[i];
        in[i] = (QInput){t->name, t->ncol, (const char *const *)t->colnames, t->types, t->rows,
                         t->append_only, t->time_col >= 0, t->time_col};
    }
    return in;
}

static char *prelude(SltDb *db)
{
    if (!db->nv)
        return NULL;
    Buf b = BUF_INIT;
    for (int i = 0; i < db->nv; i++)
        buf_printf(&b, "%s%s", i ? ";\n" : "", db->v[i].sql);
    buf_cstr(&b);
    return (char *)b.p;
}

/* A one-shot SELECT over the tables now, after the CREATE TYPEs and
   functions so far (the names an INSERT, UPDATE or DELETE may use). */
static int query_defs(SltDb *db, const char *sql, int workers, QResult *res, Err *err)
{
    Buf pre = BUF_INIT;
    for (int i = 0; i < db->nv; i++)
        if (db->v[i].is_func)
            buf_printf(&pre, "%s%s", pre.n ? ";\n" : "", db->v[i].sql);
    QInput *in = inputs(db);
    const Chunk **steps = sl_calloc((size_t)(db->nt ? db->nt : 1), sizeof(Chunk *));
    for (int i = 0; i < db->nt; i++)
        steps[i] = in[i].rows;
    int rc = oneshot_run(pre.n ? buf_cstr(&pre) : NULL, sql, in, db->nt, 1, steps, workers, NULL,
                         NULL, res, err);
    sl_free(steps);
    sl_free(in);
    buf_free(&pre);
    return rc;
}

/* ---- queries, fed at once or incrementally ---- */

static uint64_t rnd(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

#define NSTEPS 4

typedef struct Plan { /* per table row: when it is inserted, deleted, re-inserted */
    int8_t ins, del, re; /* del/re = -1: never */
} Plan;

static bool present_at(const Plan *p, int s)
{
    return p->ins <= s && !(p->del >= 0 && p->del <= s && s < p->re);
}

typedef struct StepCheck {
    SltDb *db;
    const char *prelude, *sql;
    QInput *in;
    Plan **plans;
    SltFeed *feed;
} StepCheck;

/* Rows of a result as sorted canonical text lines (order-insensitive). */
static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static char **result_lines(const QResult *r)
{
    char **v = sl_malloc(sizeof(char *) * (size_t)(r->rows->n + 1));
    for (int64_t i = 0; i < r->rows->n; i++) {
        Buf b = BUF_INIT;
        for (int j = 0; j < r->ncol; j++) {
            if (!text_format_vec(&r->rows->col[j], i, &b))
                buf_puts(&b, "NULL");
            buf_putc(&b, '|');
        }
        buf_cstr(&b);
        v[i] = (char *)b.p;
    }
    qsort(v, (size_t)r->rows->n, sizeof(char *), cmp_str);
    return v;
}

static void free_lines(char **v, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        sl_free(v[i]);
    sl_free(v);
}

static int after_step(void *arg, int step, const QResult *now)
{
    StepCheck *k = arg;
    SltDb *db = k->db;
    const Chunk **cur = sl_calloc((size_t)(db->nt ? db->nt : 1), sizeof(Chunk *));
    Arena *a = arena_new(1 << 14);
    for (int i = 0; i < db->nt; i++) {
        const Chunk *rows = db->t[i].rows;
        Chunk *c = chunk_new(a, rows->ncol, db->t[i].types, rows->n ? rows->n : 1);
        for (int64_t r = 0; r < rows->n; r++)
            if (present_at(&k->plans[i][r], step))
                chunk_append_row(c, rows, r);
        cur[i] = c;
    }
    QResult ref;
    Err e = {0};
    int rc = oneshot_run(k->prelude, k->sql, k->in, db->nt, 1, cur, 1, NULL, NULL, &ref, &e);
    if (!rc) {
        bool same = ref.rows->n == now->rows->n;
        if (same && !(ref.rows->n && (now->rows->n != ref.rows->n))) {
            char **x = result_lines(&ref), **y = result_lines(now);
            for (int64_t i = 0; i < ref.rows->n && same; i++)
                same = !strcmp(x[i], y[i]);
            free_lines(x, ref.rows->n);
            free_lines(y, now->rows->n);
        }
        if (!same && !k->feed->step_mismatch) {
            char msg[160];
            snprintf(msg, sizeof(msg),
                     "after step %d of %d: %lld rows maintained incrementally, %lld from scratch "
                     "(or different rows)",
                     step + 1, NSTEPS, (long long)now->rows->n, (long long)ref.rows->n);
            k->feed->step_mismatch = sl_malloc(strlen(msg) + 1);
            strcpy(k->feed->step_mismatch, msg);
        }
        qresult_free(&ref);
    }
    arena_free(a);
    sl_free(cur);
    return 0;
}

int db_query(SltDb *db, const char *sql, SltFeed *feed, QResult *out, Err *err)
{
    QInput *in = inputs(db);
    char *pre = prelude(db);
    int rc;
    if (!feed || !feed->incremental) {
        const Chunk **steps = sl_calloc((size_t)(db->nt ? db->nt : 1), sizeof(Chunk *));
        for (int i = 0; i < db->nt; i++)
            steps[i] = db->t[i].rows;
        rc = oneshot_run(pre, sql, in, db->nt, 1, steps, db->workers, NULL, NULL, out, err);
        sl_free(steps);
    } else {
        /* every row is inserted in one of the first steps; about a third
           are deleted in a later step and inserted again after that */
        uint64_t seed = feed->seed;
        Arena *a = arena_new(1 << 14);
        Plan **plans = sl_calloc((size_t)(db->nt ? db->nt : 1), sizeof(Plan *));
        const Chunk **steps = sl_calloc((size_t)(NSTEPS * (db->nt ? db->nt : 1)), sizeof(Chunk *));
        for (int i = 0; i < db->nt; i++) {
            const Chunk *rows = db->t[i].rows;
            plans[i] = sl_calloc((size_t)(rows->n ? rows->n : 1), sizeof(Plan));
            Chunk *st[NSTEPS];
            for (int s = 0; s < NSTEPS; s++) {
                st[s] = chunk_new(a, rows->ncol, db->t[i].types, 2 * rows->n + 1);
                steps[s * db->nt + i] = st[s];
            }
            for (int64_t r = 0; r < rows->n; r++) {
                Plan *p = &plans[i][r];
                p->ins = (int8_t)(rnd(&seed) % (NSTEPS - 1));
                p->del = p->re = -1;
                if (p->ins <= NSTEPS - 3 && rnd(&seed) % 3 == 0) {
                    p->del = (int8_t)(p->ins + 1 + (int)(rnd(&seed) % (uint64_t)(NSTEPS - 2 - p->ins)));
                    p->re = (int8_t)(p->del + 1 + (int)(rnd(&seed) % (uint64_t)(NSTEPS - 1 - p->del)));
                }
                chunk_append_row(st[p->ins], rows, r);
                if (p->del >= 0) {
                    chunk_append_row(st[p->del], rows, r);
                    st[p->del]->w[st[p->del]->n - 1] = -rows->w[r];
                    chunk_append_row(st[p->re], rows, r);
                }
            }
        }
        StepCheck k = {db, pre, sql, in, plans, feed};
        rc = oneshot_run(pre, sql, in, db->nt, NSTEPS, steps, db->workers,
                         feed->check_steps ? after_step : NULL, &k, out, err);
        for (int i = 0; i < db->nt; i++)
            sl_free(plans[i]);
        sl_free(plans);
        sl_free(steps);
        arena_free(a);
    }
    sl_free(pre);
    sl_free(in);
    return rc;
}

/* ---- statements ---- */

/* Remove the UNIQUE column constraints from a CREATE TABLE (the engine's
   tables have no UNIQUE; the runner enforces it), noting the columns. */
static char *strip_unique(const char *sql, char uniq[][256], int *nuniq)
{
    Buf b = BUF_INIT;
    const char *def = sql; /* start of the current column definition */
    int depth = 0;
    *nuniq = 0;
    for (const char *p = sql; *p; p++) {
        if (*p == '(' && ++depth == 1) {
            def = p + 1;
        } else if (*p == ')')
            depth--;
        else if (*p == ',' && depth == 1)
            def = p + 1;
        if (depth == 1 && !strncasecmp(p, "unique", 6) && !is_ident_char((unsigned char)p[6]) &&
            !is_ident_char((unsigned char)p[-1])) {
            const char *q = def;
            if (*nuniq < 16 && ident(&q, uniq[*nuniq], 256))
                (*nuniq)++;
            p += 5;
            continue;
        }
        buf_putc(&b, *p);
    }
    buf_cstr(&b);
    return (char *)b.p;
}

static int create_table(SltDb *db, const char *sql, Err *err)
{
    Circuit *c;
    char uniq[16][256];
    int nuniq;
    char *text = strip_unique(sql, uniq, &nuniq);
    Buf prog = BUF_INIT; /* the CREATE TYPEs so far, then the table */
    for (int i = 0; i < db->nv; i++)
        if (db->v[i].is_type)
            buf_printf(&prog, "%s;\n", db->v[i].sql);
    buf_puts(&prog, text);
    int crc = circuit_compile(buf_cstr(&prog), &c, err);
    buf_free(&prog);
    sl_free(text);
    if (crc)
        return err->code;
    int rc = 0;
    for (int r = 0; r < c->nrels && !rc; r++) {
        const Relation *rel = &c->rels[r];
        if (!rel->is_table) {
            rc = err_set(err, SL_ESEMANTIC, "expected CREATE TABLE");
            break;
        }
        if (find_table(db, rel->name) || find_view(db, rel->name) >= 0) {
            rc = err_set(err, SL_ESEMANTIC, "table %s already exists", rel->name);
            break;
        }
        SltTable *t = VEC_PUSH(db->t, db->nt, db->capt);
        memset(t, 0, sizeof(*t));
        t->a = arena_new(1 << 14);
        t->name = arena_strndup(t->a, rel->name, strlen(rel->name));
        t->ncol = rel->ncol;
        t->colnames = arena_alloc(t->a, sizeof(char *) * (size_t)rel->ncol);
        t->types = arena_alloc(t->a, sizeof(SqlType) * (size_t)rel->ncol);
        for (int j = 0; j < rel->ncol; j++) {
            t->colnames[j] = arena_strndup(t->a, rel->colnames[j], strlen(rel->colnames[j]));
            SqlType ty = rel->types[j];
            /* SQLite: INTEGER is 64-bit, REAL and FLOAT are doubles */
            if (type_is_integer(ty.kind))
                ty.kind = TK_BIGINT;
            else if (ty.kind == TK_REAL)
                ty.kind = TK_DOUBLE;
            t->types[j] = ty;
        }
        t->npk = rel->npk;
        t->append_only = rel->append_only;
        t->time_col = rel->wm_col >= 0 ? rel->wm_col : rel->time_col;
        t->pk = arena_alloc(t->a, sizeof(int) * (size_t)(rel->npk + 1));
        for (int k = 0; k < rel->npk; k++)
            t->pk[k] = rel->pk[k];
        t->uniq = arena_zalloc(t->a, sizeof(bool) * (size_t)(rel->ncol + 1));
        for (int k = 0; k < nuniq; k++)
            for (int j = 0; j < rel->ncol; j++)
                if (!strcasecmp(uniq[k], rel->colnames[j]))
                    t->uniq[j] = true;
        t->ra = arena_new(1 << 14);
        t->rows = new_rows(t, t->ra, 16);
    }
    circuit_free(c);
    return rc;
}

static void drop_index(SltDb *db, int i)
{
    sl_free(db->idx[i]);
    sl_free(db->idx_table[i]);
    db->nidx--;
    db->idx[i] = db->idx[db->nidx];
    db->idx_table[i] = db->idx_table[db->nidx];
}

static int drop(SltDb *db, const char *s, Err *err)
{
    char name[256];
    bool is_view = kw(&s, "view"), is_index = !is_view && kw(&s, "index");
    if (!is_view && !is_index && !kw(&s, "table"))
        return err_set(err, SL_EUNSUPPORTED, "DROP TABLE, VIEW or INDEX expected");
    bool if_exists = kw(&s, "if") && kw(&s, "exists");
    if (!ident(&s, name, sizeof(name)))
        return err_set(err, SL_EPARSE, "a name expected after DROP");
    if (op(&s, '.') && !ident(&s, name, sizeof(name)))
        return err_set(err, SL_EPARSE, "a name expected after '.'");
    if (is_index) {
        for (int i = 0; i < db->nidx; i++)
            if (!strcasecmp(db->idx[i], name)) {
                drop_index(db, i);
                return 0;
            }
        return if_exists ? 0 : err_set(err, SL_ESEMANTIC, "no such index: %s", name);
    }
    if (is_view) {
        int v = find_view(db, name);
        if (v < 0)
            return if_exists ? 0 : err_set(err, SL_ESEMANTIC, "no such view: %s", name);
        sl_free(db->v[v].name);
        sl_free(db->v[v].sql);
        memmove(&db->v[v], &db->v[v + 1], sizeof(SltView) * (size_t)(db->nv - v - 1));
        db->nv--;
        return 0;
    }
    SltTable *t = find_table(db, name);
    if (!t)
        return if_exists ? 0 : err_set(err, SL_ESEMANTIC, "no such table: %s", name);
    for (int k = db->nidx - 1; k >= 0; k--) /* its indexes go with it */
        if (!strcasecmp(db->idx_table[k], t->name))
            drop_index(db, k);
    int i = (int)(t - db->t);
    table_free(t);
    memmove(&db->t[i], &db->t[i + 1], sizeof(SltTable) * (size_t)(db->nt - i - 1));
    db->nt--;
    return 0;
}

/* 0 when stmt (a CREATE VIEW or FUNCTION) compiles over the current
   tables, views and functions (the prelude), else the error. */
static int compiles(SltDb *db, const char *stmt, Err *err)
{
    QInput *in = inputs(db);
    TableDecl *decl = sl_calloc((size_t)(db->nt ? db->nt : 1), sizeof(TableDecl));
    for (int i = 0; i < db->nt; i++)
        decl[i] = (TableDecl){in[i].name, in[i].ncol, in[i].colnames, in[i].types,
                              in[i].append_only, in[i].has_time, in[i].time_col};
    char *pre = prelude(db);
    Buf prog = BUF_INIT;
    if (pre)
        buf_printf(&prog, "%s;\n", pre);
    buf_printf(&prog, "%s", stmt);
    Circuit *c = NULL;
    int rc = circuit_compile_with(buf_cstr(&prog), decl, db->nt, 0, &c, err);
    circuit_free(c);
    sl_free(pre);
    sl_free(decl);
    sl_free(in);
    buf_free(&prog);
    return rc;
}

static int create_view(SltDb *db, const char *sql, const char *after_view, Err *err)
{
    const char *s = after_view;
    char name[256];
    bool if_not = kw(&s, "if") && kw(&s, "not") && kw(&s, "exists");
    if (!ident(&s, name, sizeof(name)))
        return err_set(err, SL_EPARSE, "a view name expected");
    if (find_view(db, name) >= 0 || find_table(db, name))
        return if_not ? 0 : err_set(err, SL_ESEMANTIC, "%s %s already exists",
                                    find_table(db, name) ? "table" : "view", name);
    Buf text = BUF_INIT;
    buf_printf(&text, "CREATE VIEW %s %s", name, s);
    /* a recursive view declared with others still to come is checked with
       the last of them (they read one another) */
    bool pending = false;
    for (int i = 0; i < db->nv; i++)
        pending = pending || (db->v[i].decl && strcasecmp(db->v[i].decl, name) &&
                              find_view(db, db->v[i].decl) < 0);
    int rc = pending ? 0 : compiles(db, buf_cstr(&text), err);
    if (rc) {
        buf_free(&text);
        return rc;
    }
    VEC_RESERVE(db->v, db->capv, db->nv + 1);
    db->v[db->nv].name = sl_malloc(strlen(name) + 1);
    strcpy(db->v[db->nv].name, name);
    db->v[db->nv].sql = (char *)buf_cstr(&text);
    db->v[db->nv].is_func = false;
    db->v[db->nv].is_type = false;
    db->v[db->nv].decl = NULL;
    db->nv++;
    (void)sql;
    return 0;
}

/* CREATE [OR REPLACE] FUNCTION ... (sql): checked over the tables,
   views and functions so far, then kept with the views (the prelude of
   every query). */
static int create_function(SltDb *db, const char *sql, const char *after_function, Err *err)
{
    const char *s = after_function;
    char name[256];
    if (!ident(&s, name, sizeof(name)))
        return err_set(err, SL_EPARSE, "a function name expected");
    int rc = compiles(db, sql, err);
    if (rc)
        return rc;
    VEC_RESERVE(db->v, db->capv, db->nv + 1);
    SltView *v = &db->v[db->nv++];
    v->name = sl_malloc(strlen(name) + 1);
    strcpy(v->name, name);
    v->sql = sl_malloc(strlen(sql) + 1);
    strcpy(v->sql, sql);
    v->is_func = true;
    v->is_type = false;
    v->decl = NULL;
    return 0;
}

/* CREATE TYPE name AS (...): checked, then kept ahead of every later
   table, view and query. */
static int create_type(SltDb *db, const char *sql, Err *err)
{
    Buf chk = BUF_INIT; /* a program needs a relation */
    buf_printf(&chk, "%s;\nCREATE TABLE slt_type_check__(x INT)", sql);
    int rc = compiles(db, buf_cstr(&chk), err);
    buf_free(&chk);
    if (rc)
        return rc;
    VEC_RESERVE(db->v, db->capv, db->nv + 1);
    SltView *v = &db->v[db->nv++];
    v->name = sl_malloc(1);
    v->name[0] = 0;
    v->sql = sl_malloc(strlen(sql) + 1);
    strcpy(v->sql, sql);
    v->is_func = true;
    v->is_type = true;
    v->decl = NULL;
    return 0;
}

/* DECLARE RECURSIVE VIEW name (...) (sql; s after VIEW): kept with the
   views (the prelude of every query), ahead of its CREATE VIEW. */
static int declare_view(SltDb *db, const char *sql, const char *s, Err *err)
{
    char name[256];
    if (!ident(&s, name, sizeof(name)))
        return err_set(err, SL_EPARSE, "a view name expected");
    if (find_view(db, name) >= 0 || find_table(db, name))
        return err_set(err, SL_ESEMANTIC, "%s %s already exists",
                       find_table(db, name) ? "table" : "view", name);
    VEC_RESERVE(db->v, db->capv, db->nv + 1);
    SltView *v = &db->v[db->nv++];
    v->name = sl_malloc(1);
    v->name[0] = 0;
    v->sql = sl_malloc(strlen(sql) + 1);
    strcpy(v->sql, sql);
    v->is_func = true;
    v->is_type = false;
    v->decl = sl_malloc(strlen(name) + 1);
    strcpy(v->decl, name);
    return 0;
}

static int create_index(SltDb *db, const char *s, Err *err)
{
    char name[256], tab[256];
    bool if_not = kw(&s, "if") && kw(&s, "not") && kw(&s, "exists");
    if (!ident(&s, name, sizeof(name)) || !kw(&s, "on") || !ident(&s, tab, sizeof(tab)))
        return err_set(err, SL_EPARSE, "CREATE INDEX name ON table (...) expected");
    if (!find_table(db, tab))
        return err_set(err, SL_ESEMANTIC, "no such table: %s", tab);

    for (int i = 0; i < db->nidx; i++)
        if (!strcasecmp(db->idx[i], name))
            return if_not ? 0 : err_set(err, SL_ESEMANTIC, "index %s already exists", name);
    int cap_table = db->capidx; /* idx and idx_table grow together */
    VEC_RESERVE(db->idx, db->capidx, db->nidx + 1);
    VEC_RESERVE(db->idx_table, cap_table, db->nidx + 1);
    db->idx[db->nidx] = sl_malloc(strlen(name) + 1);
    strcpy(db->idx[db->nidx], name);
    db->idx_table[db->nidx] = sl_malloc(strlen(tab) + 1);
    strcpy(db->idx_table[db->nidx++], tab);
    return 0;
}

/* A plain literal ([+-]* number, 'string' or NULL) into column j. */
static bool literal_into(SltTable *t, Chunk *c, int j, int64_t row, const char *b, const char *e,
                         Err *err, int *rc)
{
    while (b < e && isspace((unsigned char)*b))
        b++;
    while (e > b && isspace((unsigned char)e[-1]))
        e--;
    Vec *d = &c->col[j];
    if (e - b == 4 && !strncasecmp(b, "null", 4)) {
        if (!d->nul) {
            *rc = err_set(err, SL_EDATA, "NOT NULL constraint failed: %s.%s", t->name,
                          t->colnames[j]);
            return true;
        }
        vec_set_null(d, row);
        return true;
    }
    char num[128];
    size_t n = 0;
    bool neg = false;
    const char *p = b;
    if (*p == '\'') {
        Buf s = BUF_INIT;
        for (p++; p < e; p++) {
            if (*p == '\'') {
                if (p + 1 < e && p[1] == '\'') {
                    buf_putc(&s, '\'');
                    p++;
                    continue;
                }
                break;
            }
            buf_putc(&s, *p);
        }
        if (p + 1 != e) {
            buf_free(&s);
            return false;
        }
        if (d->nul)
            d->nul[row] = 0;
        *rc = text_parse_vec(d, row, s.p ? (const char *)s.p : "", s.n, t->ra, err);
        buf_free(&s);
        return true;
    }
    while (p < e && (*p == '-' || *p == '+' || isspace((unsigned char)*p))) {
        if (*p == '-')
            neg = !neg;
        p++;
    }
    if (p == e)
        return false;
    if (neg)
        num[n++] = '-';
    for (; p < e; p++) {
        if (!(isdigit((unsigned char)*p) || *p == '.' || *p == 'e' || *p == 'E') ||
            n + 1 >= sizeof(num))
            return false;
        num[n++] = *p;
    }
    num[n] = 0;
    if (d->nul)
        d->nul[row] = 0;
    if (d->i && type_is_integer(d->t.kind) && strpbrk(num, ".eE")) {
        double f = strtod(num, NULL);
        if (f != (double)(int64_t)f) {
            *rc = err_set(err, SL_EDATA, "value %s does not fit INTEGER column %s.%s", num,
                          t->name, t->colnames[j]);
            return true;
        }
        d->i[row] = (int64_t)f;
        return true;
    }
    *rc = text_parse_vec(d, row, num, n, t->ra, err);
    return true;
}

static void remove_keys(SltTable *t, const Chunk *c, int64_t from)
{
    /* INSERT OR REPLACE: drop old rows whose key a new row has */
    int64_t k = 0;
    for (int64_t i = 0; i < from; i++) {
        bool hit = false;
        for (int64_t j = from; j < c->n && !hit; j++)
            hit = same_key(t, c, i, c, j);
        if (!hit) {
            if (k != i) {
                Chunk tmp = *t->rows;
                tmp.n = k;
                chunk_append_row(&tmp, c, i);
            }
            k++;
        }
    }
    int64_t nnew = c->n - from;
    for (int64_t j = 0; j < nnew; j++) {
        Chunk tmp = *t->rows;
        tmp.n = k + j;
        chunk_append_row(&tmp, c, from + j);
    }
    t->rows->n = k + nnew;
}

static int insert(SltDb *db, const char *s, bool replace, Err *err)
{
    char name[256];
    if (!kw(&s, "into"))
        return err_set(err, SL_EPARSE, "INTO expected after INSERT");
    if (!ident(&s, name, sizeof(name)))
        return err_set(err, SL_EPARSE, "a table name expected after INTO");
    SltTable *t = find_table(db, name);
    if (!t)
        return err_set(err, SL_ESEMANTIC, find_view(db, name) >= 0 ? "cannot modify %s because it is a view" : "no such table: %s", name);
    int map[256]; /* value position -> column */
    int nmap = t->ncol;
    for (int j = 0; j < t->ncol && j < 256; j++)
        map[j] = j;
    if (op(&s, '(')) {
        nmap = 0;
        do {
            char col[256];
            if (!ident(&s, col, sizeof(col)))
                return err_set(err, SL_EPARSE, "a column name expected");
            int found = -1;
            for (int j = 0; j < t->ncol; j++)
                if (!strcasecmp(t->colnames[j], col))
                    found = j;
            if (found < 0)
                return err_set(err, SL_ESEMANTIC, "table %s has no column named %s", t->name, col);
            if (nmap < 256)
                map[nmap++] = found;
        } while (op(&s, ','));
        if (!op(&s, ')'))
            return err_set(err, SL_EPARSE, "')' expected after the column list");
    }
    int64_t n0 = t->rows->n;
    int rc = 0;
    ws(&s);
    if (kw(&s, "values")) {
        /* tuples of literals are converted here; anything else is evaluated
           by the engine as SELECT e1, e2, ... */
        while (!rc) {
            if (!op(&s, '('))
                break;
            const char *b = s;
            int depth = 1;
            const char *e;
            for (e = s; *e && depth; e++) {
                if (*e == '\'') {
                    for (e++; *e && *e != '\''; e++)
                        ;
                    if (!*e)
                        break;
                } else if (*e == '(')
                    depth++;
                else if (*e == ')')
                    depth--;
            }
            if (depth)
                return err_set(err, SL_EPARSE, "unterminated VALUES tuple");
            const char *close = e - 1; /* at ')' */
            const char *st[256], *en[256];
            int nv = split_commas(b, close, st, en, 256);
            if (nv != nmap) {
                rc = err_set(err, SL_ESEMANTIC, "%d values for %d columns", nv, nmap);
                break;
            }
            grow(t);
            int64_t row = t->rows->n;
            for (int j = 0; j < t->ncol; j++)
                if (t->rows->col[j].nul)
                    vec_set_null(&t->rows->col[j], row);
            bool lit = true;
            for (int k = 0; k < nv && lit && !rc; k++)
                lit = literal_into(t, t->rows, map[k], row, st[k], en[k], err, &rc);
            if (!lit && !rc) {
                Buf q = BUF_INIT;
                buf_puts(&q, "SELECT ");
                buf_append(&q, b, (size_t)(close - b));
                QResult res;
                rc = query_defs(db, buf_cstr(&q), 1, &res, err);
                buf_free(&q);
                if (!rc) {
                    if (res.ncol != nmap || res.rows->n != 1)
                        rc = err_set(err, SL_ESEMANTIC, "VALUES tuple does not match columns");
                    for (int k = 0; k < nmap && !rc; k++)
                        rc = put_value(t, t->rows, t->ra, map[k], row, &res.rows->col[k], 0, err);
                    qresult_free(&res);
                }
            }
            if (rc)
                break;
            for (int j = 0; j < t->ncol; j++) { /* columns not listed: NULL */
                bool listed = false;
                for (int k = 0; k < nmap; k++)
                    listed = listed || map[k] == j;
                if (!listed && !t->rows->col[j].nul)
                    rc = err_set(err, SL_EDATA, "NOT NULL constraint failed: %s.%s", t->name,
                                 t->colnames[j]);
            }
            t->rows->w[row] = 1;
            t->rows->n++;
            s = e;
            if (!op(&s, ','))
                break;
        }
        ws(&s);
        if (!rc && *s)
            rc = err_set(err, SL_EPARSE, "unexpected text after VALUES: %.30s", s);
    } else {
        QResult res;
        QInput *in = inputs(db);
        char *pre = prelude(db);
        const Chunk **steps = sl_calloc((size_t)(db->nt ? db->nt : 1), sizeof(Chunk *));
        for (int i = 0; i < db->nt; i++)
            steps[i] = db->t[i].rows;
        rc = oneshot_run(pre, s, in, db->nt, 1, steps, db->workers, NULL, NULL, &res, err);
        sl_free(steps);
        sl_free(pre);
        sl_free(in);
        if (!rc) {
            if (res.ncol != nmap)
                rc = err_set(err, SL_ESEMANTIC, "%d values for %d columns", res.ncol, nmap);
            for (int64_t i = 0; i < res.rows->n && !rc; i++) {
                grow(t);
                int64_t row = t->rows->n;
                for (int j = 0; j < t->ncol; j++)
                    if (t->rows->col[j].nul)
                        vec_set_null(&t->rows->col[j], row);
                for (int k = 0; k < nmap && !rc; k++)
                    rc = put_value(t, t->rows, t->ra, map[k], row, &res.rows->col[k], i, err);
                t->rows->w[row] = 1;
                t->rows->n++;
            }
            qresult_free(&res);
        }
    }
    if (!rc && replace && t->npk)
        remove_keys(t, t->rows, n0);
    else if (!rc)
        rc = check_pk(t, t->rows, n0, err);
    if (rc)
        t->rows->n = n0; /* the statement changes nothing */
    return rc;
}

/* DELETE FROM t [WHERE p]: the rows where p is not true stay. */
static int delete_rows(SltDb *db, const char *s, Err *err)
{
    char name[256];
    if (!kw(&s, "from") || !ident(&s, name, sizeof(name)))
        return err_set(err, SL_EPARSE, "DELETE FROM table expected");
    SltTable *t = find_table(db, name);
    if (!t)
        return err_set(err, SL_ESEMANTIC, "no such table: %s", name);
    ws(&s);
    if (!*s) {
        t->rows->n = 0;
        return 0;
    }
    if (!kw(&s, "where"))
        return err_set(err, SL_EPARSE, "WHERE expected in DELETE, found \"%.30s\"", s);
    Buf q = BUF_INIT;
    buf_printf(&q, "SELECT * FROM %s WHERE (%s) IS NOT TRUE", t->name, s);
    QResult res;
    int rc = query_defs(db, buf_cstr(&q), db->workers, &res, err);
    buf_free(&q);
    if (!rc) {
        rc = set_rows(t, &res, err);
        qresult_free(&res);
    }
    return rc;
}

/* UPDATE t SET c = e, ... [WHERE p]: every row mapped by a SELECT. */
static int update(SltDb *db, const char *s, Err *err)
{
    char name[256];
    if (!ident(&s, name, sizeof(name)) || !kw(&s, "set"))
        return err_set(err, SL_EPARSE, "UPDATE table SET ... expected");
    SltTable *t = find_table(db, name);
    if (!t)
        return err_set(err, SL_ESEMANTIC, "no such table: %s", name);
    const char *where = find_top_kw(s, "where");
    const char *st[256], *en[256];
    int n = split_commas(s, where, st, en, 256);
    const char **val = sl_calloc((size_t)t->ncol, sizeof(char *));
    int *vlen = sl_calloc((size_t)t->ncol, sizeof(int));
    int rc = 0;
    for (int k = 0; k < n && k < 256 && !rc; k++) {
        const char *p = st[k];
        char col[256];
        if (!ident(&p, col, sizeof(col)) || !op(&p, '=')) {
            rc = err_set(err, SL_EPARSE, "column = expression expected in SET");
            break;
        }
        int found = -1;
        for (int j = 0; j < t->ncol; j++)
            if (!strcasecmp(t->colnames[j], col))
                found = j;
        if (found < 0)
            rc = err_set(err, SL_ESEMANTIC, "no such column: %s", col);
        else {
            val[found] = p;
            vlen[found] = (int)(en[k] - p);
        }
    }
    if (!rc) {
        Buf q = BUF_INIT;
        buf_puts(&q, "SELECT ");
        for (int j = 0; j < t->ncol; j++) {
            if (j)
                buf_puts(&q, ", ");
            if (!val[j])
                buf_puts(&q, t->colnames[j]);
            else if (where)
                buf_printf(&q, "CASE WHEN (%s) IS TRUE THEN (%.*s) ELSE %s END", where + 5,
                           vlen[j], val[j], t->colnames[j]);
            else
                buf_printf(&q, "(%.*s)", vlen[j], val[j]);
        }
        buf_printf(&q, " FROM %s", t->name);
        QResult res;
        rc = query_defs(db, buf_cstr(&q), db->workers, &res, err);
        buf_free(&q);
        if (!rc) {
            rc = set_rows(t, &res, err);
            qresult_free(&res);
        }
    }
    sl_free(val);
    sl_free(vlen);
    return rc;
}

static int exec_one(SltDb *db, const char *sql, Err *err)
{
    const char *s = sql;
    if (kw(&s, "create")) {
        const char *after = s;
        if (!kw(&s, "temp"))
            kw(&s, "temporary");
        if (kw(&s, "table"))
            return create_table(db, sql, err);
        if (kw(&s, "view"))
            return create_view(db, sql, s, err);
        s = after;
        if (kw(&s, "or") && !kw(&s, "replace"))
            return err_set(err, SL_EUNSUPPORTED, "CREATE OR REPLACE expected");
        if (kw(&s, "function"))
            return create_function(db, sql, s, err);
        s = after;
        if (kw(&s, "type"))
            return create_type(db, sql, err);
        s = after;
        kw(&s, "unique");
        if (kw(&s, "index"))
            return create_index(db, s, err);
        if (kw(&s, "trigger"))
            return err_set(err, SL_EUNSUPPORTED,
                           "CREATE TRIGGER is not supported: views are maintained incrementally "
                           "instead");
        return err_set(err, SL_EUNSUPPORTED, "this CREATE statement is not supported");
    }
    if (kw(&s, "declare")) {
        if (kw(&s, "recursive") && kw(&s, "view"))
            return declare_view(db, sql, s, err);
        return err_set(err, SL_EUNSUPPORTED, "DECLARE RECURSIVE VIEW expected");
    }
    if (kw(&s, "drop"))
        return drop(db, s, err);
    if (kw(&s, "insert")) {
        bool rep = false;
        if (kw(&s, "or")) {
            if (kw(&s, "replace"))
                rep = true;
            else
                return err_set(err, SL_EUNSUPPORTED, "only INSERT OR REPLACE is supported");
        }
        return insert(db, s, rep, err);
    }
    if (kw(&s, "replace"))
        return insert(db, s, true, err);
    if (kw(&s, "delete"))
        return delete_rows(db, s, err);
    if (kw(&s, "update"))
        return update(db, s, err);
    if (kw(&s, "reindex"))
        return 0;
    return err_set(err, SL_EUNSUPPORTED, "statement not supported by the runner: %.40s", sql);
}

int db_exec(SltDb *db, const char *sql, Err *err)
{
    /* a record may hold several statements separated by ';' */
    const char *p = sql;
    Buf one = BUF_INIT;
    int rc = 0;
    while (*p && !rc) {
        const char *e = p;
        for (; *e && *e != ';'; e++)
            if (*e == '\'') {
                for (e++; *e && *e != '\''; e++)
                    ;
                if (!*e)
                    break;
            }
        one.n = 0;
        buf_append(&one, p, (size_t)(e - p));
        const char *q = buf_cstr(&one);
        while (isspace((unsigned char)*q))
            q++;
        if (*q)
            rc = exec_one(db, q, err);
        p = *e ? e + 1 : e;
    }
    buf_free(&one);
    return rc;
}
