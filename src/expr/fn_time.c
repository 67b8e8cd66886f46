/*
 * expr/fn_time.c - EXTRACT(field FROM DATE/TIME/TIMESTAMP) over vectors.
 * In: the operand evaluated into a dense Vec by expr_eval (expr.c), the
 * output Vec allocated with the node's type and the row mask m.
 * Out: the field as a number (BIGINT per expr.h; a DOUBLE or DECIMAL result
 * type keeps the fraction of SECOND and EPOCH). Calendar is proleptic
 * Gregorian (text.h), DOW counts from Sunday = 0 as PostgreSQL does, EPOCH
 * is seconds since 1970-01-01 00:00:00.
 *
 * Fields are computed into a wide scratch vector (BIGINT, or DECIMAL(18,6)
 * for SECOND and EPOCH, i.e. microseconds) and converted with the CAST
 * kernel, which truncates toward zero for an integer result.
 */
#include "expr_int.h"

int expr__fn_time(const Expr *e, const Vec *args, int64_t n, EvalCtx *cx, Vec *out,
                  uint8_t *m)
{
    TypeKind k0 = e->na > 0 ? (TypeKind)args[0].t.kind : TK_NULL;
    int fn = e->fn;
    char tn[48];
    if (!type_is_temporal(k0) || !args[0].i)
        return err_set(cx->err, SL_ERUNTIME, "EXTRACT needs a DATE, TIME or TIMESTAMP, not %s",
                       type_name(args[0].t, tn, sizeof(tn)));
    bool dated = fn == FN_EXTRACT_YEAR || fn == FN_EXTRACT_MONTH || fn == FN_EXTRACT_DAY ||
                 fn == FN_EXTRACT_DOW || fn == FN_EXTRACT_DOY;
    if (k0 == TK_TIME && dated)
        return err_set(cx->err, SL_ERUNTIME, "EXTRACT field %d is not defined for TIME", fn);

    bool micro = fn == FN_EXTRACT_SECOND || fn == FN_EXTRACT_EPOCH;
    SqlType wt = micro ? (SqlType){TK_DECIMAL, 0, DECIMAL_MAX_PREC, 6, VARCHAR_UNBOUNDED}
                       : type_make(TK_BIGINT, false);
    Vec w;
    expr__vec(cx, wt, n, &w);
    int64_t *z = w.i;
    const int64_t *x = args[0].i;

    /* days and microseconds of the day of each row (NULL rows as 0) */
    int64_t *days = arena_alloc(cx->arena, sizeof(int64_t) * (size_t)n);
    int64_t *tod = arena_alloc(cx->arena, sizeof(int64_t) * (size_t)n);
    switch (k0) {
    case TK_DATE:
        for (int64_t k = 0; k < n; k++) {
            days[k] = m[k] ? 0 : x[k];
            tod[k] = 0;
        }
        break;
    case TK_TIME:
        for (int64_t k = 0; k < n; k++) {
            days[k] = 0;
            tod[k] = m[k] ? 0 : x[k];
        }
        break;
    default:
        for (int64_t k = 0; k < n; k++) {
            int64_t v = m[k] ? 0 : x[k];
            days[k] = expr__floor_div(v, US_PER_DAY);
            tod[k] = v - days[k] * US_PER_DAY;
        }
        break;
    }

    int y, mo, d;
    switch (fn) {
    case FN_EXTRACT_YEAR:
        for (int64_t k = 0; k < n; k++) {
            date_to_ymd(days[k], &y, &mo, &d);
            z[k] = y;
        }
        break;
    case FN_EXTRACT_MONTH:
        for (int64_t k = 0; k < n; k++) {
            date_to_ymd(days[k], &y, &mo, &d);
            z[k] = mo;
        }
        break;
    case FN_EXTRACT_DAY:
        for (int64_t k = 0; k < n; k++) {
            date_to_ymd(days[k], &y, &mo, &d);
            z[k] = d;
        }
        break;
    case FN_EXTRACT_DOW: /* 1970-01-01 was a Thursday (4) */
        for (int64_t k = 0; k < n; k++)
            z[k] = days[k] + 4 - expr__floor_div(days[k] + 4, 7) * 7;
        break;
    case FN_EXTRACT_DOY:
        for (int64_t k = 0; k < n; k++) {
            date_to_ymd(days[k], &y, &mo, &d);
            z[k] = days[k] - date_from_ymd(y, 1, 1) + 1;
        }
        break;
    case FN_EXTRACT_HOUR:
        for (int64_t k = 0; k < n; k++)
            z[k] = tod[k] / (3600 * US_PER_SEC);
        break;
    case FN_EXTRACT_MINUTE:
        for (int64_t k = 0; k < n; k++)
            z[k] = tod[k] / (60 * US_PER_SEC) % 60;
        break;
    case FN_EXTRACT_SECOND:
        for (int64_t k = 0; k < n; k++)
            z[k] = tod[k] % (60 * US_PER_SEC);
        break;
    case FN_EXTRACT_EPOCH:
        for (int64_t k = 0; k < n; k++)
            z[k] = days[k] * US_PER_DAY + tod[k];
        break;
    default: return err_set(cx->err, SL_ERUNTIME, "unknown EXTRACT field %d", fn);
    }
    return expr__cast(&w, n, cx, out, m);
}
