/*
 * expr/expr_tree.c - the Expr tree outside evaluation: constructors the
 * binder and planner call to build bound expressions (in the plan arena),
 * and their EXPLAIN text (expr_print), which `sluice check`, plan dumps and
 * error messages show. Function names (FN_* -> "NAME") live here.
 * Evaluation is expr.c.
 */
#include "expr.h"

#include "expr_int.h"

/* ----------------------------------------------------------- constructors */

bool expr_same(const Expr *a, const Expr *b)
{
    if (a == b)
        return true;
    if (!a || !b) /* (an operand left out) */
        return false;
    if (a->k != b->k || a->na != b->na || a->col != b->col || a->fn != b->fn ||
        memcmp(&a->t, &b->t, sizeof(a->t)) != 0)
        return false;
    if (a->k == E_CONST) {
        if (a->cnull != b->cnull)
            return false;
        if (!a->cnull)
            switch (type_phys(a->t)) {
            case PHYS_I64:
                if (a->ci != b->ci)
                    return false;
                break;
            case PHYS_I128:
                if (a->cx != b->cx)
                    return false;
                break;
            case PHYS_F64:
                if (memcmp(&a->cf, &b->cf, sizeof(a->cf)) != 0)
                    return false;
                break;
            case PHYS_STR:
                if (a->cs.n != b->cs.n || (a->cs.n && memcmp(a->cs.p, b->cs.p, a->cs.n) != 0))
                    return false;
                break;
            }
    }
    for (int i = 0; i < a->na; i++)
        if (!expr_same(a->a[i], b->a[i]))
            return false;
    return true;
}

Expr *expr_new(Arena *a, ExprKind k, SqlType t, int na)
{
    Expr *e = arena_zalloc(a, sizeof(*e));
    e->k = k;
    e->t = t;
    e->na = na;
    if (na > 0)
        e->a = arena_zalloc(a, sizeof(Expr *) * (size_t)na);
    return e;
}

Expr *expr_col(Arena *a, int col, SqlType t)
{
    Expr *e = expr_new(a, E_COL, t, 0);
    e->col = col;
    return e;
}

Expr *expr_const_null(Arena *a, SqlType t)
{
    Expr *e = expr_new(a, E_CONST, t, 0);
    e->t.nullable = 1;
    e->cnull = true;
    return e;
}

Expr *expr_const_i64(Arena *a, SqlType t, int64_t v)
{
    Expr *e = expr_new(a, E_CONST, t, 0);
    e->ci = v;
    return e;
}

Expr *expr_const_dec(Arena *a, SqlType t, i128 v)
{
    Expr *e = expr_new(a, E_CONST, t, 0);
    if (type_is_wide(t))
        e->cx = v;
    else
        e->ci = (int64_t)v;
    return e;
}

Expr *expr_const_f64(Arena *a, SqlType t, double v)
{
    Expr *e = expr_new(a, E_CONST, t, 0);
    e->cf = v;
    return e;
}

Expr *expr_const_str(Arena *a, SqlType t, const char *s, size_t n)
{
    Expr *e = expr_new(a, E_CONST, t, 0);
    e->cs.p = arena_strndup(a, s, n);
    e->cs.n = (uint32_t)n;
    return e;
}

/* ------------------------------------------------------------ EXPLAIN text */

const char *expr__op_text(ExprKind k)
{
    switch (k) {
    case E_NEG: return "-";
    case E_ADD: return "+";
    case E_SUB: return "-";
    case E_MUL: return "*";
    case E_DIV: return "/";
    case E_MOD: return "%";
    case E_EQ: return "=";
    case E_NE: return "<>";
    case E_LT: return "<";
    case E_LE: return "<=";
    case E_GT: return ">";
    case E_GE: return ">=";
    case E_AND: return "AND";
    case E_OR: return "OR";
    case E_CONCAT: return "||";
    default: return "?";
    }
}

static const char *const fn_names[FN__COUNT] = {
    [FN_ABS] = "ABS",
    [FN_LOWER] = "LOWER",
    [FN_UPPER] = "UPPER",
    [FN_CHAR_LENGTH] = "CHAR_LENGTH",
    [FN_SUBSTRING] = "SUBSTRING",
    [FN_TRIM] = "TRIM",
    [FN_LTRIM] = "LTRIM",
    [FN_RTRIM] = "RTRIM",
    [FN_POSITION] = "POSITION",
    [FN_REPLACE] = "REPLACE",
    [FN_FLOOR] = "FLOOR",
    [FN_CEIL] = "CEIL",
    [FN_ROUND] = "ROUND",
    [FN_MOD] = "MOD",
    [FN_POWER] = "POWER",
    [FN_SQRT] = "SQRT",
    [FN_LN] = "LN",
    [FN_EXP] = "EXP",
    [FN_SIGN] = "SIGN",
    [FN_NOT_NULL] = "NOT_NULL",
    [FN_EXTRACT_YEAR] = "YEAR",
    [FN_EXTRACT_MONTH] = "MONTH",
    [FN_EXTRACT_DAY] = "DAY",
    [FN_EXTRACT_HOUR] = "HOUR",
    [FN_EXTRACT_MINUTE] = "MINUTE",
    [FN_EXTRACT_SECOND] = "SECOND",
    [FN_EXTRACT_DOW] = "DOW",
    [FN_EXTRACT_DOY] = "DOY",
    [FN_EXTRACT_EPOCH] = "EPOCH",
    [FN_EXTRACT_WEEK] = "WEEK",
    [FN_EXTRACT_QUARTER] = "QUARTER",
    [FN_EXTRACT_MILLISECOND] = "MILLISECOND",
    [FN_EXTRACT_MICROSECOND] = "MICROSECOND",
    [FN_LEFT] = "LEFT",
    [FN_RIGHT] = "RIGHT",
    [FN_CONCAT] = "CONCAT",
    [FN_INITCAP] = "INITCAP",
    [FN_TRIM_CHARS] = "TRIM",
    [FN_ADD_MONTHS] = "ADD_MONTHS",
    [FN_DATE_TRUNC] = "DATE_TRUNC",
    [FN_TIMESTAMPDIFF] = "TIMESTAMPDIFF",
    [FN_SPLIT_INDEX] = "SPLIT_INDEX",
    [FN_REGEXP_EXTRACT] = "REGEXP_EXTRACT",
    [FN_REGEXP_LIKE] = "REGEXP_LIKE",
    [FN_REGEXP_REPLACE] = "REGEXP_REPLACE",
    [FN_REGEXP_COUNT] = "REGEXP_COUNT",
    [FN_REGEXP_SUBSTR] = "REGEXP_SUBSTR",
    [FN_REGEXP_INSTR] = "REGEXP_INSTR",
    [FN_SIMILAR_ESCAPE] = "SIMILAR_TO_ESCAPE",
    [FN_SPLIT_PART] = "SPLIT_PART",
    [FN_ARRAY] = "ARRAY",
    [FN_ARRAY_GET] = "ARRAY_GET",
    [FN_CARDINALITY] = "CARDINALITY",
    [FN_ARRAY_LENGTH] = "ARRAY_LENGTH",
    [FN_ARRAY_CAT] = "ARRAY_CAT",
    [FN_ARRAY_TO_STRING] = "ARRAY_TO_STRING",
    [FN_ARRAY_ANY] = "ARRAY_ANY",
    [FN_ARRAY_POSITION] = "ARRAY_POSITION",
    [FN_ROW] = "ROW",
    [FN_ROW_GET] = "ROW_FIELD",
    [FN_MAP] = "MAP",
    [FN_MAP_GET] = "MAP_GET",
    [FN_MAP_CONTAINS_KEY] = "MAP_CONTAINS_KEY",
    [FN_MAP_CARDINALITY] = "CARDINALITY",
    [FN_MAP_KEYS] = "MAP_KEYS",
    [FN_MAP_VALUES] = "MAP_VALUES",
    [FN_PARSE_JSON] = "PARSE_JSON",
    [FN_TO_JSON] = "TO_JSON",
    [FN_VARIANT_NULL] = "VARIANTNULL",
    [FN_VARIANT_GET] = "VARIANT_GET",
    [FN_VARIANT_TEXT] = "VARIANT_TEXT",
    [FN_VARIANT_TYPEOF] = "TYPEOF",
    [FN_VARIANT_IS] = "VARIANT_IS",
    [FN_JSON_ARRAY] = "JSON_BUILD_ARRAY",
    [FN_JSON_OBJECT] = "JSON_BUILD_OBJECT",
    [FN_JSON_CONCAT] = "JSON_CONCAT",
    [FN_JSON_CONTAINS] = "JSON_CONTAINS",
    [FN_JSON_EXISTS] = "JSON_EXISTS",
    [FN_JSON_ARRAY_LENGTH] = "JSONB_ARRAY_LENGTH",
    [FN_JSON_PATH] = "JSON_PATH",
    [FN_JSON_SET] = "JSONB_SET",
    [FN_ARRAY_SLICE] = "ARRAY_SLICE",
    [FN_TUMBLE_START] = "TUMBLE_START",
    [FN_TIME_ADD] = "TIME_ADD",
    [FN_AT_TZ_LOCAL] = "TIMEZONE",
    [FN_AT_TZ_INSTANT] = "TIMEZONE",
    [FN_TZ_OFFSET] = "TZ_OFFSET",
};

const char *expr__fn_name(int fn) { return fn >= 0 && fn < FN__COUNT ? fn_names[fn] : NULL; }

static void print_const(const Expr *e, Buf *out)
{
    if (e->cnull) {
        buf_puts(out, "NULL");
        return;
    }
    switch ((TypeKind)e->t.kind) {
    case TK_BOOL: buf_puts(out, e->ci ? "TRUE" : "FALSE"); return;
    case TK_CHAR:
    case TK_VARCHAR:
        buf_putc(out, '\'');
        for (uint32_t j = 0; j < e->cs.n; j++) {
            if (e->cs.p[j] == '\'')
                buf_putc(out, '\'');
            buf_putc(out, e->cs.p[j]);
        }
        buf_putc(out, '\'');
        return;
    case TK_ARRAY:
    case TK_ROW:
    case TK_MAP: {
        char tn[96];
        buf_puts(out, "CAST('");
        text_format(e->t, 0, 0, e->cs, out);
        buf_printf(out, "' AS %s)", type_name(e->t, tn, sizeof(tn)));
        return;
    }
    case TK_VARIANT: {
        Buf j = BUF_INIT;
        text_format(e->t, 0, 0, e->cs, &j);
        buf_puts(out, "PARSE_JSON('");
        for (size_t k = 0; k < j.n; k++) {
            if (j.p[k] == '\'')
                buf_putc(out, '\'');
            buf_putc(out, (char)j.p[k]);
        }
        buf_puts(out, "')");
        buf_free(&j);
        return;
    }
    case TK_DATE: buf_puts(out, "DATE '"); break;
    case TK_TIME: buf_puts(out, "TIME '"); break;
    case TK_TIMESTAMP: buf_puts(out, "TIMESTAMP '"); break;
    case TK_TIMESTAMPTZ: buf_puts(out, "TIMESTAMPTZ '"); break;
    case TK_INTERVAL_DT:
    case TK_INTERVAL_YM: buf_puts(out, "INTERVAL '"); break;
    default: break;
    }
    if (type_is_wide(e->t)) {
        text_format_dec(e->cx, e->t.scale, out);
        return;
    }
    text_format(e->t, e->ci, e->cf, e->cs, out);
    if (type_is_interval((TypeKind)e->t.kind))
        buf_puts(out, e->t.kind == TK_INTERVAL_DT ? "' DAY TO SECOND" : "' YEAR TO MONTH");
    else if (type_is_temporal((TypeKind)e->t.kind))
        buf_putc(out, '\'');
}

static void print_list(const Expr *e, int from, Buf *out)
{
    for (int j = from; j < e->na; j++) {
        if (j > from)
            buf_puts(out, ", ");
        expr_print(e->a[j], out);
    }
}

void expr_print(const Expr *e, Buf *out)
{
    char tn[48];
    if (!e) {
        buf_puts(out, "<null>");
        return;
    }
    switch (e->k) {
    case E_COL: buf_printf(out, "#%d", e->col); return;
    case E_CONST: print_const(e, out); return;
    case E_NEG:
        buf_puts(out, "(-");
        expr_print(e->a[0], out);
        buf_putc(out, ')');
        return;
    case E_NOT:
        buf_puts(out, "(NOT ");
        expr_print(e->a[0], out);
        buf_putc(out, ')');
        return;
    case E_ADD:
    case E_SUB:
    case E_MUL:
    case E_DIV:
    case E_MOD:
    case E_EQ:
    case E_NE:
    case E_LT:
    case E_LE:
    case E_GT:
    case E_GE:
    case E_AND:
    case E_OR:
    case E_CONCAT:
        buf_putc(out, '(');
        for (int j = 0; j < e->na; j++) {
            if (j > 0)
                buf_printf(out, " %s ", expr__op_text(e->k));
            expr_print(e->a[j], out);
        }
        buf_putc(out, ')');
        return;
    case E_ISNULL:
    case E_ISNOTNULL:
    case E_ISTRUE:
    case E_ISFALSE: {
        static const char *const what[] = {"IS NULL", "IS NOT NULL", "IS TRUE", "IS FALSE"};
        buf_putc(out, '(');
        expr_print(e->a[0], out);
        buf_printf(out, " %s)", what[e->k - E_ISNULL]);
        return;
    }
    case E_CASE:
        buf_puts(out, "CASE");
        for (int j = 0; j + 1 < e->na; j += 2) {
            buf_puts(out, " WHEN ");
            expr_print(e->a[j], out);
            buf_puts(out, " THEN ");
            expr_print(e->a[j + 1], out);
        }
        if (e->na % 2) {
            buf_puts(out, " ELSE ");
            expr_print(e->a[e->na - 1], out);
        }
        buf_puts(out, " END");
        return;
    case E_CAST:
        buf_puts(out, "CAST(");
        expr_print(e->a[0], out);
        buf_printf(out, " AS %s)", type_name(e->t, tn, sizeof(tn)));
        return;
    case E_IN:
        buf_putc(out, '(');
        expr_print(e->a[0], out);
        buf_puts(out, " IN (");
        print_list(e, 1, out);
        buf_puts(out, "))");
        return;
    case E_COALESCE:
    case E_NULLIF:
        buf_puts(out, e->k == E_COALESCE ? "COALESCE(" : "NULLIF(");
        print_list(e, 0, out);
        buf_putc(out, ')');
        return;
    case E_LIKE:
        buf_putc(out, '(');
        expr_print(e->a[0], out);
        buf_puts(out, " LIKE ");
        expr_print(e->a[1], out);
        if (e->na > 2) {
            buf_puts(out, " ESCAPE ");
            expr_print(e->a[2], out);
        }
        buf_putc(out, ')');
        return;
    case E_FUNC:
        if (e->fn < 0 || e->fn >= FN__COUNT) {
            buf_printf(out, "FUNC%d(", e->fn);
        } else if (e->fn >= FN_EXTRACT_YEAR && e->fn <= FN_EXTRACT_MICROSECOND) {
            buf_printf(out, "EXTRACT(%s FROM ", fn_names[e->fn]);
            print_list(e, 0, out);
            buf_putc(out, ')');
            return;
        } else if (e->fn == FN_POSITION && e->na == 2) {
            buf_puts(out, "POSITION(");
            expr_print(e->a[0], out);
            buf_puts(out, " IN ");
            expr_print(e->a[1], out);
            buf_putc(out, ')');
            return;
        } else {
            buf_printf(out, "%s(", fn_names[e->fn]);
        }
        print_list(e, 0, out);
        buf_putc(out, ')');
        return;
    }
    buf_printf(out, "<expr %d>", (int)e->k);
}
