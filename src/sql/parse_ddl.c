/*
 * sql/parse_ddl.c - the parser's entry (sql_parse, ast.h): a program is
 * statements separated by semicolons, each CREATE TABLE (columns with
 * their types and constraints, PRIMARY KEY) or CREATE [MATERIALIZED]
 * VIEW (column names, query: parse_query.c), either with WITH ('key' =
 * 'value', ...) properties, or LATENESS t.col expr (a column's lateness,
 * also written as the column constraint LATENESS expr or as Flink's
 * WATERMARK FOR col AS col - expr), or CREATE
 * FUNCTION (a SQL function: parameters, result type, one expression as
 * its body), optionally headed by SET TIME ZONE (the session zone:
 * Program.tz, and the zone of every TIMESTAMPTZ type parsed after it).
 * Column types are parsed here for CAST too
 * (sql__parse_type). Tokens come from lexer.c; statements we recognise
 * but do not support yet are reported as such.
 */
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "../base/err.h"
#include "../base/vec.h"
#include "../expr/text.h"
#include "../expr/tz.h"
#include "parse_int.h"

static int parse_int_arg(Parser *p, int *out)
{
    Token *t = cur(p);
    if (t->k != T_INT)
        return sql__fail(p, "an integer");
    long v = strtol(t->s, NULL, 10);
    if (v < 0 || v > 1000000000)
        return err_setpos(p->err, SL_EPARSE, t->line, t->col, "number %s out of range", t->s);
    *out = (int)v;
    p->i++;
    return 0;
}

int sql__parse_type(Parser *p, SqlType *out)
{
    Token *t = cur(p);
    SqlType ty = type_make(TK_NULL, true);
    int nested;
    if (t->k != T_IDENT)
        return sql__fail(p, "a type name");
    const char *s = t->s;
    p->i++;
    if (!strcasecmp(s, "boolean") || !strcasecmp(s, "bool"))
        ty.kind = TK_BOOL;
    else if (!strcasecmp(s, "tinyint"))
        ty.kind = TK_TINYINT;
    else if (!strcasecmp(s, "smallint") || !strcasecmp(s, "int2"))
        ty.kind = TK_SMALLINT;
    else if (!strcasecmp(s, "int") || !strcasecmp(s, "integer") || !strcasecmp(s, "int4"))
        ty.kind = TK_INT;
    else if (!strcasecmp(s, "bigint") || !strcasecmp(s, "int8"))
        ty.kind = TK_BIGINT;
    else if (!strcasecmp(s, "real") || !strcasecmp(s, "float4"))
        ty.kind = TK_REAL;
    else if (!strcasecmp(s, "float") || !strcasecmp(s, "double") || !strcasecmp(s, "float8")) {
        ty.kind = TK_DOUBLE;
        if (!strcasecmp(s, "double"))
            accept_kw(p, "precision");
        else if (!strcasecmp(s, "float") && accept_op(p, "(")) {
            /* FLOAT(p): binary digits of precision, REAL up to 24 (as PostgreSQL) */
            Token *pt = cur(p);
            int bits;
            if (parse_int_arg(p, &bits) || sql__expect_op(p, ")"))
                return p->err->code;
            if (bits < 1 || bits > 53)
                return err_setpos(p->err, SL_EPARSE, pt->line, pt->col,
                                  "precision for type FLOAT must be between 1 and 53 bits");
            if (bits <= 24)
                ty.kind = TK_REAL;
        }
    } else if (!strcasecmp(s, "decimal") || !strcasecmp(s, "numeric") || !strcasecmp(s, "dec")) {
        /* without a precision: DECIMAL(38,18), so that values such as 0.05
           are kept exactly (docs/sql.md, types) */
        int prec = DECIMAL_DEFAULT_PREC, scale = DECIMAL_DEFAULT_SCALE;
        ty.kind = TK_DECIMAL;
        if (accept_op(p, "(")) {
            scale = 0; /* DECIMAL(p) is DECIMAL(p,0), as the standard says */
            Token *pt = cur(p);
            if (parse_int_arg(p, &prec))
                return p->err->code;
            if (accept_op(p, ",") && parse_int_arg(p, &scale))
                return p->err->code;
            if (sql__expect_op(p, ")"))
                return p->err->code;
            if (prec < 1 || prec > DECIMAL_MAX_PREC) {
                if (prec > DECIMAL_MAX_PREC)
                    return err_setpos(p->err, SL_EUNSUPPORTED, pt->line, pt->col,
                                      "DECIMAL precision %d is not supported (at most %d)",
                                      prec, DECIMAL_MAX_PREC);
                return err_setpos(p->err, SL_EPARSE, pt->line, pt->col,
                                  "DECIMAL precision must be at least 1");
            }
            if (scale > prec)
                return err_setpos(p->err, SL_EPARSE, pt->line, pt->col,
                                  "DECIMAL scale %d exceeds precision %d", scale, prec);
        }
        ty.prec = (uint8_t)prec;
        ty.scale = (uint8_t)scale;
    } else if (!strcasecmp(s, "varchar") || !strcasecmp(s, "char") ||
               !strcasecmp(s, "character") || !strcasecmp(s, "text") ||
               !strcasecmp(s, "string")) {
        bool is_char = !strcasecmp(s, "char") || !strcasecmp(s, "character");
        if (is_char && accept_kw(p, "varying"))
            is_char = false;
        ty.kind = is_char ? TK_CHAR : TK_VARCHAR;
        ty.len = is_char ? 1 : VARCHAR_UNBOUNDED;
        if ((!strcasecmp(s, "varchar") || !strcasecmp(s, "char") ||
             !strcasecmp(s, "character")) && accept_op(p, "(")) {
            int len;
            if (parse_int_arg(p, &len) || sql__expect_op(p, ")"))
                return p->err->code;
            if (len < 1)
                return err_setpos(p->err, SL_EPARSE, t->line, t->col,
                                  "length of %s must be at least 1", s);
            ty.len = len;
        }
    } else if (!strcasecmp(s, "variant") || !strcasecmp(s, "json") || !strcasecmp(s, "jsonb")) {
        ty.kind = TK_VARIANT; /* PostgreSQL's json and jsonb are VARIANT too */
    } else if (!strcasecmp(s, "date"))
        ty.kind = TK_DATE;
    else if (!strcasecmp(s, "time"))
        ty.kind = TK_TIME;
    else if (!strcasecmp(s, "timestamptz")) {
        ty.kind = TK_TIMESTAMPTZ;
        ty.len = p->tz;
    } else if (!strcasecmp(s, "timestamp")) {
        ty.kind = TK_TIMESTAMP;
        if (accept_kw(p, "with")) {
            if (sql__expect_kw(p, "time") || sql__expect_kw(p, "zone"))
                return p->err->code;
            ty.kind = TK_TIMESTAMPTZ;
            ty.len = p->tz;
        } else if (accept_kw(p, "without") && (sql__expect_kw(p, "time") || sql__expect_kw(p, "zone")))
            return p->err->code;
    } else if ((nested = sql__parse_nested_type(p, s, &ty)) != 0) {
        if (nested < 0)
            return p->err->code;
    } else if (!strcasecmp(s, "interval")) {
        /* INTERVAL unit [TO unit] (Calcite, the standard): YEAR, MONTH and
           YEAR TO MONTH are months; the day-to-second qualifiers microseconds */
        Token *u = cur(p);
        int from = u->k == T_IDENT ? time_unit_parse(u->s) : -1, to = from;
        if (from < 0 || from == TU_QUARTER || from == TU_WEEK || from > TU_SECOND)
            return err_setpos(p->err, SL_EUNSUPPORTED, t->line, t->col,
                              "type INTERVAL without a qualifier is not supported yet "
                              "(PostgreSQL's interval mixes months, days and seconds): write "
                              "INTERVAL DAY TO SECOND or INTERVAL YEAR TO MONTH");
        p->i++;
        if (accept_kw(p, "to")) {
            Token *u2 = cur(p);
            to = u2->k == T_IDENT ? time_unit_parse(u2->s) : -1;
            if (to <= from || to == TU_WEEK || to > TU_SECOND ||
                (from <= TU_MONTH) != (to <= TU_MONTH))
                return sql__fail(p, "a finer interval unit after TO (YEAR TO MONTH, "
                                    "DAY/HOUR/MINUTE TO SECOND...)");
            p->i++;
        }
        if (to == TU_SECOND && accept_op(p, "(")) { /* SECOND(p): fraction digits, ignored */
            int prec;
            if (parse_int_arg(p, &prec) || sql__expect_op(p, ")"))
                return p->err->code;
        }
        if (from != TU_DAY && from != TU_YEAR) /* a bare number would mean days/years */
            return err_setpos(p->err, SL_EUNSUPPORTED, u->line, u->col,
                              "type INTERVAL %s%s%s is not supported yet (values are read as "
                              "days or years): write INTERVAL DAY TO SECOND or INTERVAL YEAR "
                              "TO MONTH", time_unit_name(from), to != from ? " TO " : "",
                              to != from ? time_unit_name(to) : "");
        ty.kind = from <= TU_MONTH ? TK_INTERVAL_YM : TK_INTERVAL_DT;
    } else {
        static const char *later[] = {"array", "map", "binary",
                                      "varbinary", "uuid", "row", "geometry", "bytea",
                                      "blob"};
        for (size_t i = 0; i < ARRAY_LEN(later); i++)
            if (!strcasecmp(s, later[i])) {
                char b[64];
                snprintf(b, sizeof(b), "type %s", s);
                for (char *c = b + 5; *c; c++)
                    *c = (char)(*c >= 'a' && *c <= 'z' ? *c - 32 : *c);
                return sql__unsupported(p, t, b);
            }
        p->i--;
        return sql__fail(p, "a type name");
    }
    /* T ARRAY, T[] (a size, T ARRAY[n] or T[n], is ignored as PostgreSQL
       does); T ARRAY ARRAY or T[][]: an ARRAY of ARRAYs (nested, as in
       Feldera: the inner arrays may differ in length) */
    while (is_kw(cur(p), "array") || is_op(cur(p), "[")) {
        Token *at = cur(p);
        bool kw = accept_kw(p, "array");
        if (accept_op(p, "[")) {
            int size;
            if (!is_op(cur(p), "]") && parse_int_arg(p, &size))
                return p->err->code;
            if (sql__expect_op(p, "]"))
                return p->err->code;
        } else if (!kw) {
            return sql__fail(p, "\"[\"");
        }
        if (ty.kind == TK_NULL)
            return sql__unsupported(p, at, "this ARRAY element type");
        ty = type_array(ty, true);
    }
    *out = ty;
    return 0;
}

static int parse_props(Parser *p, Property **out, int *nout)
{
    if (sql__expect_op(p, "("))
        return p->err->code;
    int cap = *nout; /* full: the first one grows it */
    do {
        Token *k = cur(p), *v;
        if (k->k != T_STR)
            return sql__fail(p, "a property name in single quotes");
        p->i++;
        if (sql__expect_op(p, "="))
            return p->err->code;
        v = cur(p);
        if (v->k != T_STR)
            return sql__fail(p, "a property value in single quotes");
        p->i++;
        Property *pr = VEC_PUSH_ARENA(p->a, *out, *nout, cap);
        pr->key = (char *)k->s;
        pr->value = (char *)v->s;
        pr->line = k->line;
        pr->col = k->col;
        pr->vline = v->line;
        pr->vcol = v->col + 1;
    } while (accept_op(p, ","));
    return sql__expect_op(p, ")");
}

/* WATERMARK FOR col AS expr (Flink's spelling of a watermark), read as
   the column constraint LATENESS: expr must be col itself (lateness 0) or
   col - constant (lateness constant). The column may be declared after
   the WATERMARK clause, so it is found once the whole list is read. */
typedef struct Watermark {
    Token *at;       /* the WATERMARK keyword, NULL when there is none */
    char *col;       /* FOR col */
    Token *col_tok;
    Ast *lateness;   /* the constant, or NULL for lateness 0 */
} Watermark;

static int watermark_shape_error(Parser *p, const Ast *x, const char *col)
{
    return err_setpos(p->err, SL_EUNSUPPORTED, x->line, x->col,
                      "WATERMARK FOR %s AS ... supports only %s or %s - <constant> (a constant "
                      "INTERVAL, or an integer for an integer column), the same as LATENESS "
                      "<constant> on the column (docs/streaming.md)", col, col, col);
}

static bool is_the_column(const Ast *x, const char *col)
{
    return x->k == A_COL && !x->qual && !strcasecmp(x->name, col);
}

static int parse_watermark(Parser *p, Token *t, Watermark *wm)
{
    if (wm->at)
        return err_setpos(p->err, SL_EUNSUPPORTED, t->line, t->col,
                          "table has WATERMARK FOR twice (line %d:%d): one watermark column per "
                          "table is supported", wm->at->line, wm->at->col);
    p->i += 2; /* WATERMARK FOR */
    wm->at = t;
    wm->col_tok = cur(p);
    if (!(wm->col = sql__ident(p, "a column name")) || sql__expect_kw(p, "as"))
        return p->err->code;
    Ast *x = sql__parse_expr(p);
    if (!x)
        return p->err->code;
    if (is_the_column(x, wm->col))
        wm->lateness = NULL;
    else if (x->k == A_BIN && x->op == OP_SUB && is_the_column(x->a, wm->col) &&
             (x->b->k == A_TYPED || x->b->k == A_INT || x->b->k == A_NUM ||
              (x->b->k == A_UN && x->b->op == OP_PLUS &&
               (x->b->a->k == A_TYPED || x->b->a->k == A_INT))))
        wm->lateness = x->b;
    else if (x->k == A_BIN && x->op == OP_SUB && !is_the_column(x->a, wm->col))
        return watermark_shape_error(p, x->a, wm->col);
    else if (x->k == A_BIN && x->op == OP_SUB)
        return watermark_shape_error(p, x->b, wm->col);
    else
        return watermark_shape_error(p, x, wm->col);
    return 0;
}

static int resolve_watermark(Parser *p, Stmt *s, Watermark *wm)
{
    for (int i = 0; i < s->ncols; i++) {
        ColumnDef *c = &s->cols[i];
        if (strcasecmp(c->name, wm->col))
            continue;
        if (c->lateness)
            return err_setpos(p->err, SL_ESEMANTIC, wm->at->line, wm->at->col,
                              "column %s has both LATENESS and WATERMARK FOR: write one", c->name);
        Ast *x = wm->lateness;
        if (!x) { /* lateness 0, a constant of the column's kind */
            bool time = type_is_ts(c->type.kind) || c->type.kind == TK_DATE;
            x = sql__new_ast(p, time ? A_TYPED : A_INT, wm->at);
            x->str = arena_strndup(p->a, "0", 1);
            x->slen = 1;
            if (time) {
                x->type.kind = TK_INTERVAL_DT;
                x->ival = TU_SECOND;
            }
        }
        c->lateness = x;
        c->lat_line = wm->at->line;
        c->lat_col = wm->at->col;
        return 0;
    }
    return err_setpos(p->err, SL_ESEMANTIC, wm->col_tok->line, wm->col_tok->col,
                      "WATERMARK FOR names column \"%s\", which table %s does not have", wm->col,
                      s->name);
}

static int parse_create_table(Parser *p, Stmt *s)
{
    Token *nt = cur(p);
    s->k = S_CREATE_TABLE;
    s->name_line = nt->line;
    s->name_col = nt->col;
    if (!(s->name = sql__ident(p, "a table name")) || sql__expect_op(p, "("))
        return p->err->code;
    int cap = 0;
    Watermark wm = {0};
    do {
        Token *t = cur(p);
        if (is_kw(t, "primary")) {
            p->i++;
            if (sql__expect_kw(p, "key") || sql__expect_op(p, "("))
                return p->err->code;
            if (s->npk)
                return err_setpos(p->err, SL_ESEMANTIC, t->line, t->col,
                                  "table %s has more than one PRIMARY KEY", s->name);
            if (sql__parse_names(p, &s->pk, &s->npk))
                return p->err->code;
            continue;
        }
        if (is_kw(t, "watermark") && is_kw(&p->t[p->i + 1], "for")) {
            if (parse_watermark(p, t, &wm))
                return p->err->code;
            continue;
        }
        if (is_kw(t, "foreign") || is_kw(t, "constraint") || is_kw(t, "unique") ||
            is_kw(t, "check"))
            return sql__unsupported(p, t, "table constraints other than PRIMARY KEY");
        ColumnDef *c = VEC_PUSH_ARENA(p->a, s->cols, s->ncols, cap);
        c->line = t->line;
        c->col = t->col;
        c->lateness = NULL;
        c->primary_key = false;
        if (!(c->name = sql__ident(p, "a column name or PRIMARY KEY")) ||
            sql__parse_type(p, &c->type))
            return p->err->code;
        c->type.nullable = 1;
        for (;;) {
            Token *ct = cur(p);
            if (accept_kw(p, "not")) {
                if (sql__expect_kw(p, "null"))
                    return p->err->code;
                c->type.nullable = 0;
            } else if (accept_kw(p, "null")) {
                c->type.nullable = 1;
            } else if (accept_kw(p, "primary")) {
                if (sql__expect_kw(p, "key"))
                    return p->err->code;
                if (s->npk)
                    return err_setpos(p->err, SL_ESEMANTIC, ct->line, ct->col,
                                      "table %s has more than one PRIMARY KEY", s->name);
                s->pk = arena_alloc(p->a, sizeof(char *));
                s->pk[s->npk++] = c->name;
                c->primary_key = true;
            } else if (accept_kw(p, "lateness")) {
                /* LATENESS expr: a watermark on this column (docs/streaming.md) */
                c->lat_line = ct->line;
                c->lat_col = ct->col;
                if (c->lateness)
                    return err_setpos(p->err, SL_ESEMANTIC, ct->line, ct->col,
                                      "column %s has LATENESS twice", c->name);
                if (!(c->lateness = sql__parse_expr(p)))
                    return p->err->code;
            } else if (is_kw(ct, "default") ||
                       is_kw(ct, "foreign") || is_kw(ct, "references") ||
                       is_kw(ct, "unique") || is_kw(ct, "check") || is_kw(ct, "watermark")) {
                char b[64];
                snprintf(b, sizeof(b), "column constraint %s", ct->s);
                return sql__unsupported(p, ct, b);
            } else
                break;
        }
    } while (accept_op(p, ","));
    if (sql__expect_op(p, ")"))
        return p->err->code;
    if (wm.at && resolve_watermark(p, s, &wm))
        return p->err->code;
    if (accept_kw(p, "with"))
        return parse_props(p, &s->props, &s->nprops);
    return 0;
}

static int parse_create_view(Parser *p, Stmt *s)
{
    Token *nt = cur(p);
    s->k = S_CREATE_VIEW;
    s->name_line = nt->line;
    s->name_col = nt->col;
    if (!(s->name = sql__ident(p, "a view name")))
        return p->err->code;
    if (accept_op(p, "(") && sql__parse_names(p, &s->col_aliases, &s->ncol_aliases))
        return p->err->code;
    if (accept_kw(p, "with") && parse_props(p, &s->props, &s->nprops))
        return p->err->code;
    if (sql__expect_kw(p, "as"))
        return p->err->code;
    s->query = sql__parse_query(p);
    return s->query ? 0 : p->err->code;
}

/* The body of a dollar-quoted function body after its opening quote
   `tag` ($$ or $tag$): SELECT expression [[AS] alias] [;], then the
   closing quote. Anything else a query may have is refused where it
   starts. */
static Ast *parse_dollar_body(Parser *p, const char *tag)
{
    if (sql__expect_kw(p, "select"))
        return NULL;
    Ast *body = sql__parse_expr(p);
    if (!body)
        return NULL;
    static const char *clauses[] = {"from", "where", "group", "having", "order", "limit",
                                    "offset", "fetch", "union", "intersect", "except",
                                    "window", "qualify"};
    for (int pass = 0; pass < 2; pass++) {
        Token *t = cur(p);
        for (size_t i = 0; i < ARRAY_LEN(clauses); i++)
            if (is_kw(t, clauses[i])) {
                err_setpos(p->err, SL_EUNSUPPORTED, t->line, t->col,
                           "%s in a function body is not supported: the body is one "
                           "expression (SELECT expression, without FROM or other clauses)", t->s);
                return NULL;
            }
        if (pass == 0 && (accept_kw(p, "as") || (t->k == T_IDENT && !sql__is_reserved(t)) ||
                          t->k == T_QIDENT) && !sql__ident(p, "an alias"))
            return NULL;
    }
    accept_op(p, ";");
    Token *t = cur(p);
    if (is_op(t, tag)) {
        p->i++;
        return body;
    }
    if (is_op(t, ",")) {
        err_setpos(p->err, SL_EUNSUPPORTED, t->line, t->col,
                   "a function returns one value: its body must SELECT one expression, not "
                   "several (table-returning functions are not supported)");
        return NULL;
    }
    char b[64];
    snprintf(b, sizeof(b), "the end of the function body (%s)", tag);
    sql__fail(p, b);
    return NULL;
}

/* CREATE [OR REPLACE] FUNCTION name ([param type [NOT NULL], ...]) RETURNS
   type [NOT NULL], then the body in one of three spellings: AS expression
   (Feldera), RETURN expression or AS $$ SELECT expression $$ (PostgreSQL,
   with LANGUAGE SQL and IMMUTABLE/STABLE/VOLATILE, PARALLEL ..., CALLED ON
   NULL INPUT, STRICT / RETURNS NULL ON NULL INPUT around it). Other
   languages and table-returning functions are refused at their place. */
static int parse_create_function(Parser *p, Stmt *s)
{
    Token *nt = cur(p);
    s->k = S_CREATE_FUNCTION;
    s->name_line = nt->line;
    s->name_col = nt->col;
    if (!(s->name = sql__ident(p, "a function name")) || sql__expect_op(p, "("))
        return p->err->code;
    int cap = 0;
    if (!accept_op(p, ")")) {
        do {
            Token *t = cur(p);
            if (is_kw(t, "out") || is_kw(t, "inout") || is_kw(t, "variadic"))
                return sql__unsupported(p, t, "parameter modes (OUT, INOUT, VARIADIC)");
            if (is_kw(t, "in") && (p->t[p->i + 1].k == T_IDENT || p->t[p->i + 1].k == T_QIDENT) &&
                p->t[p->i + 2].k == T_IDENT) { /* IN name type: IN is the only mode */
                p->i++;
                t = cur(p);
            }
            FuncParam *fp = VEC_PUSH_ARENA(p->a, s->fparams, s->nfparams, cap);
            fp->line = t->line;
            fp->col = t->col;
            if (!(fp->name = sql__ident(p, "a parameter name")))
                return p->err->code;
            if (is_op(cur(p), ",") || is_op(cur(p), ")"))
                return sql__fail(p, "the parameter's type (parameters are written name type)");
            if (sql__parse_type(p, &fp->type))
                return p->err->code;
            fp->type.nullable = 1;
            if (accept_kw(p, "not")) {
                if (sql__expect_kw(p, "null"))
                    return p->err->code;
                fp->type.nullable = 0;
            } else
                accept_kw(p, "null");
            if (is_kw(cur(p), "default") || is_op(cur(p), "="))
                return sql__unsupported(p, cur(p), "parameter defaults");
            for (int i = 0; i < s->nfparams - 1; i++)
                if (!strcasecmp(s->fparams[i].name, fp->name))
                    return err_setpos(p->err, SL_ESEMANTIC, fp->line, fp->col,
                                      "function %s has two parameters named \"%s\"", s->name,
                                      fp->name);
        } while (accept_op(p, ","));
        if (sql__expect_op(p, ")"))
            return p->err->code;
    }
    if (sql__expect_kw(p, "returns"))
        return p->err->code;
    Token *rt = cur(p);
    if (is_kw(rt, "table") || is_kw(rt, "setof"))
        return err_setpos(p->err, SL_EUNSUPPORTED, rt->line, rt->col,
                          "table-returning functions (RETURNS %s) are not supported: a SQL "
                          "function returns one value", rt->s);
    if (sql__parse_type(p, &s->fret))
        return p->err->code;
    s->fret.nullable = 1;
    if (accept_kw(p, "not")) {
        if (sql__expect_kw(p, "null"))
            return p->err->code;
        s->fret.nullable = 0;
    }
    int body_line = 0, body_col = 0;
    for (;;) {
        Token *t = cur(p);
        if (accept_kw(p, "language")) {
            Token *l = cur(p);
            if ((l->k != T_IDENT && l->k != T_STR && l->k != T_QIDENT))
                return sql__fail(p, "a language name (SQL)");
            if (strcasecmp(l->s, "sql"))
                return err_setpos(p->err, SL_EUNSUPPORTED, l->line, l->col,
                                  "LANGUAGE %s is not supported: only SQL functions (LANGUAGE "
                                  "SQL, a body that is one expression) are", l->s);
            p->i++;
        } else if (accept_kw(p, "immutable") || accept_kw(p, "stable") ||
                   accept_kw(p, "volatile")) {
            /* every expression Sluice has is deterministic */
        } else if (accept_kw(p, "parallel")) {
            if (!sql__ident(p, "SAFE, RESTRICTED or UNSAFE"))
                return p->err->code;
        } else if (is_kw(t, "called")) {
            p->i++;
            if (sql__expect_kw(p, "on") || sql__expect_kw(p, "null") ||
                sql__expect_kw(p, "input"))
                return p->err->code;
        } else if (accept_kw(p, "strict")) {
            s->fstrict = true; /* NULL when any argument is NULL */
        } else if (is_kw(t, "returns") && is_kw(&p->t[p->i + 1], "null")) {
            p->i += 2;
            if (sql__expect_kw(p, "on") || sql__expect_kw(p, "null") ||
                sql__expect_kw(p, "input"))
                return p->err->code;
            s->fstrict = true;
        } else if (is_kw(t, "security") || is_kw(t, "leakproof") || is_kw(t, "cost") ||
                   is_kw(t, "set") || is_kw(t, "window") || is_kw(t, "transform")) {
            char b[80];
            snprintf(b, sizeof(b), "function option %s", t->s);
            return sql__unsupported(p, t, b);
        } else if (is_kw(t, "as") || is_kw(t, "return")) {
            if (s->fbody)
                return err_setpos(p->err, SL_EPARSE, t->line, t->col,
                                  "function %s has a second body (the first is at %d:%d)",
                                  s->name, body_line, body_col);
            p->i++;
            Token *b = cur(p);
            body_line = b->line;
            body_col = b->col;
            if (is_kw(t, "as") && b->k == T_OP && b->s[0] == '$') {
                p->i++;
                if (!(s->fbody = parse_dollar_body(p, b->s)))
                    return p->err->code;
                continue;
            }
            if (is_kw(t, "as") && b->k == T_STR && is_kw(&p->t[p->i + 1], "language"))
                return err_setpos(p->err, SL_EUNSUPPORTED, b->line, b->col,
                                  "a function body in a string literal is not supported: write "
                                  "AS $$ SELECT expression $$, RETURN expression or AS expression");
            if (!(s->fbody = sql__parse_expr(p)))
                return p->err->code;
        } else
            break;
    }
    if (!s->fbody)
        return sql__fail(p, "the function body (AS expression, RETURN expression or AS $$ "
                            "SELECT expression $$)");
    return 0;
}

/* DECLARE RECURSIVE VIEW name (column type [NOT NULL | NULL], ...): the
   columns of a view whose definition (a later CREATE VIEW) reads itself. */
static int parse_declare(Parser *p, Stmt *s)
{
    p->i += 2;
    if (sql__expect_kw(p, "view"))
        return p->err->code;
    Token *nt = cur(p);
    s->k = S_DECLARE_VIEW;
    s->name_line = nt->line;
    s->name_col = nt->col;
    if (!(s->name = sql__ident(p, "a view name")) || sql__expect_op(p, "("))
        return p->err->code;
    int cap = 0;
    do {
        Token *t = cur(p);
        ColumnDef *c = VEC_PUSH_ARENA(p->a, s->cols, s->ncols, cap);
        *c = (ColumnDef){0};
        c->line = t->line;
        c->col = t->col;
        if (!(c->name = sql__ident(p, "a column name")) || sql__parse_type(p, &c->type))
            return p->err->code;
        c->type.nullable = 1;
        if (accept_kw(p, "not")) {
            if (sql__expect_kw(p, "null"))
                return p->err->code;
            c->type.nullable = 0;
        } else {
            accept_kw(p, "null");
        }
    } while (accept_op(p, ","));
    return sql__expect_op(p, ")");
}

static int parse_stmt(Parser *p, Stmt **out)
{
    Token *t = cur(p);
    Stmt *s = arena_zalloc(p->a, sizeof(*s));
    s->line = t->line;
    s->col = t->col;
    *out = s;
    if (accept_kw(p, "lateness")) { /* LATENESS t.col expr (the statement form) */
        s->k = S_LATENESS;
        Token *nt = cur(p);
        s->name_line = nt->line;
        s->name_col = nt->col;
        if (!(s->name = sql__ident(p, "a table name")) || sql__expect_op(p, ".") ||
            !(s->lat_colname = sql__ident(p, "a column name")))
            return p->err->code;
        return (s->lateness = sql__parse_expr(p)) ? 0 : p->err->code;
    }
    if (!accept_kw(p, "create")) {
        if (is_kw(t, "insert") || is_kw(t, "declare") || is_kw(t, "set") ||
            is_kw(t, "select") || is_kw(t, "drop")) {
            char b[64];
            if (is_kw(t, "declare") && is_kw(&p->t[p->i + 1], "recursive"))
                return parse_declare(p, s);
            snprintf(b, sizeof(b), "statement %s", t->s);
            return sql__unsupported(p, t, b);
        }
        return sql__fail(p, "CREATE TABLE, CREATE VIEW, CREATE FUNCTION or LATENESS");
    }
    if (accept_kw(p, "table"))
        return parse_create_table(p, s);
    if (accept_kw(p, "materialized")) {
        s->materialized = true;
        if (sql__expect_kw(p, "view"))
            return p->err->code;
        return parse_create_view(p, s);
    }
    if (accept_kw(p, "local")) {
        if (sql__expect_kw(p, "view"))
            return p->err->code;
        return parse_create_view(p, s);
    }
    if (accept_kw(p, "view"))
        return parse_create_view(p, s);
    if (accept_kw(p, "function"))
        return parse_create_function(p, s);
    if (is_kw(cur(p), "or") && is_kw(&p->t[p->i + 1], "replace") &&
        is_kw(&p->t[p->i + 2], "function")) {
        p->i += 3; /* a program is compiled whole: nothing to replace */
        return parse_create_function(p, s);
    }
    if (is_kw(cur(p), "aggregate") ||
        is_kw(cur(p), "index") || is_kw(cur(p), "linear")) {
        char b[64];
        snprintf(b, sizeof(b), "CREATE %s", cur(p)->s);
        return sql__unsupported(p, cur(p), b);
    }
    return sql__fail(p, "TABLE, VIEW, MATERIALIZED VIEW or FUNCTION after CREATE");
}

/* The byte offset of line:column (lexer.c: columns count bytes). */
static size_t text_offset(const char *text, int line, int col)
{
    const char *q = text;
    for (int l = 1; l < line && *q; q++)
        if (*q == '\n')
            l++;
    size_t rest = strlen(q);
    return (size_t)(q - text) + ((size_t)(col - 1) < rest ? (size_t)(col - 1) : rest);
}

/* SET TIME ZONE 'zone' | SET TIME ZONE LOCAL/DEFAULT | SET timezone { = | TO }
   'zone': the session time zone (docs/sql.md), only ahead of the program's
   first statement since it changes how every later one reads and shows
   TIMESTAMP WITH TIME ZONE. */
static int parse_set_time_zone(Parser *p, bool first)
{
    Token *t = cur(p);
    p->i++;
    if (accept_kw(p, "time")) {
        if (sql__expect_kw(p, "zone"))
            return p->err->code;
    } else if (!accept_kw(p, "timezone")) {
        return sql__unsupported(p, t, "SET other than SET TIME ZONE");
    } else if (!accept_op(p, "=") && !accept_kw(p, "to")) {
        return sql__fail(p, "= or TO");
    }
    if (!first)
        return err_setpos(p->err, SL_ESEMANTIC, t->line, t->col,
                          "SET TIME ZONE must come before the first statement of the program");
    Token *z = cur(p);
    if (z->k == T_IDENT && (is_kw(z, "local") || is_kw(z, "default"))) {
        p->i++;
        p->tz = TZ_UTC;
        return 0;
    }
    if (z->k != T_STR)
        return sql__fail(p, "a time zone name in quotes ('Europe/Paris')");
    Err e;
    err_init(&e);
    int id = tz_find(z->s, z->n, &e);
    if (id < 0)
        return err_setpos(p->err, SL_ESEMANTIC, z->line, z->col, "%s", e.msg);
    p->i++;
    p->tz = id;
    return 0;
}

int sql_parse(const char *text, Arena *a, Program **out, Err *err)
{
    Err local;
    Parser p = {.a = a, .err = err ? err : &local, .tz = TZ_UTC};
    err_clear(&local);
    if (lex(text, a, &p.t, &p.n, p.err))
        return p.err->code;
    Program *prog = arena_zalloc(a, sizeof(*prog));
    int cap = 0, tcap = 0;
    while (cur(&p)->k != T_EOF) {
        if (accept_op(&p, ";"))
            continue;
        if (is_kw(cur(&p), "set") &&
            (is_kw(&p.t[p.i + 1], "timezone") ||
             (is_kw(&p.t[p.i + 1], "time") && is_kw(&p.t[p.i + 2], "zone")))) {
            if (parse_set_time_zone(&p, prog->n == 0))
                return p.err->code;
            prog->tz = p.tz;
            if (cur(&p)->k != T_EOF && sql__expect_op(&p, ";"))
                return p.err->code;
            continue;
        }
        if (is_kw(cur(&p), "create") && is_kw(&p.t[p.i + 1], "type")) {
            Token *ct = cur(&p);
            p.i += 2; /* a type only the parser needs: no statement */
            if (sql__parse_create_type(&p))
                return p.err->code;
            /* its text, which one-shot queries over the program re-declare */
            size_t off = text_offset(text, ct->line, ct->col);
            size_t len = text_offset(text, cur(&p)->line, cur(&p)->col) - off;
            *VEC_PUSH_ARENA(a, prog->types, prog->ntypes, tcap) = arena_strndup(a, text + off, len);
            if (cur(&p)->k != T_EOF && sql__expect_op(&p, ";"))
                return p.err->code;
            continue;
        }
        Stmt *s;
        if (parse_stmt(&p, &s))
            return p.err->code;
        if (s->k == S_CREATE_FUNCTION) { /* its text, for one-shot queries */
            s->text_off = text_offset(text, s->line, s->col);
            s->text_len = text_offset(text, cur(&p)->line, cur(&p)->col) - s->text_off;
        }
        *VEC_PUSH_ARENA(a, prog->stmts, prog->n, cap) = s;
        if (cur(&p)->k != T_EOF && sql__expect_op(&p, ";"))
            return p.err->code;
    }
    *out = prog;
    return 0;
}
