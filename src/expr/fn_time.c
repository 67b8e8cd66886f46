/*
 * expr/fn_time.c - EXTRACT(field FROM DATE/TIME/TIMESTAMP), DATE_TRUNC,
 * TIMESTAMPDIFF and calendar-month arithmetic (DATE/TIMESTAMP + INTERVAL
 * YEAR TO MONTH) over vectors. Day-to-second interval arithmetic needs no
 * kernel: it is plain BIGINT + and - on microseconds (expr.c).
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
#include "tz.h"

static int days_in_month(int y, int mo)
{
    static const int d[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return mo == 2 && leap ? 29 : d[mo - 1];
}

/* days shifted by `months` calendar months, the day clamped to the month's
 * end (2024-01-31 + 1 month = 2024-02-29); false when out of range. */
bool date_shift_months(int64_t days, int64_t months, int64_t *out)
{
    int y, mo, d;
    date_to_ymd(days, &y, &mo, &d);
    int64_t t = (int64_t)y * 12 + (mo - 1);
    if (months > 12 * 300000 || months < -12 * 300000)
        return false;
    t += months;
    int64_t ny = expr__floor_div(t, 12);
    int nm = (int)(t - ny * 12) + 1;
    if (ny < -200000 || ny > 200000)
        return false;
    int dim = days_in_month((int)ny, nm);
    *out = date_from_ymd((int)ny, nm, d > dim ? dim : d);
    return true;
}

/* DATE or TIMESTAMP plus months (interval YEAR TO MONTH). */
static int add_months(const Vec *args, int64_t n, EvalCtx *cx, Vec *out, const uint8_t *m)
{
    bool ts = args[0].t.kind == TK_TIMESTAMP;
    const int64_t *x = args[0].i, *mo = args[1].i;
    for (int64_t k = 0; k < n; k++) {
        out->i[k] = 0;
        if (m[k])
            continue;
        int64_t days = ts ? expr__floor_div(x[k], US_PER_DAY) : x[k], r;
        if (!date_shift_months(days, mo[k], &r))
            return err_set(cx->err, SL_ERUNTIME, "date out of range adding %lld months",
                           (long long)mo[k]);
        out->i[k] = ts ? r * US_PER_DAY + (x[k] - days * US_PER_DAY) : r;
    }
    return 0;
}

/* Monday-based ISO week-numbering: days of the Monday of ISO week 1 of y. */
static int64_t iso_week1(int y)
{
    int64_t jan4 = date_from_ymd(y, 1, 4);
    int64_t dow = jan4 + 3 - expr__floor_div(jan4 + 3, 7) * 7; /* Monday = 0 */
    return jan4 - dow;
}

static int64_t iso_week(int64_t days)
{
    int y, mo, d;
    date_to_ymd(days, &y, &mo, &d);
    int64_t w1 = iso_week1(y + 1);
    if (days >= w1)
        return 1;
    w1 = iso_week1(y);
    if (days < w1)
        w1 = iso_week1(y - 1);
    return (days - w1) / 7 + 1;
}

/* DATE_TRUNC(x, unit): DATE stays DATE, TIMESTAMP stays TIMESTAMP; WEEK
 * starts on Monday (ISO, as PostgreSQL). A TIMESTAMPTZ is truncated in its
 * session zone: its wall-clock time there, truncated, read back in the zone
 * for a DAY or coarser, else with the offset it had (PostgreSQL: so
 * DATE_TRUNC('hour', x) keeps x's side of a fall-back overlap). */
static int date_trunc(const Vec *args, int64_t n, EvalCtx *cx, Vec *out, const uint8_t *m)
{
    bool tstz = args[0].t.kind == TK_TIMESTAMPTZ, ts = tstz || args[0].t.kind == TK_TIMESTAMP;
    int zone = tstz ? args[0].t.len : 0;
    const int64_t *x = args[0].i, *u = args[1].i;
    for (int64_t k = 0; k < n; k++) {
        out->i[k] = 0;
        if (m[k])
            continue;
        int64_t off = 0;
        if (tstz && x[k] < TZ_US_LIMIT && x[k] > -TZ_US_LIMIT)
            off = (int64_t)tz_offset(zone, expr__floor_div(x[k], US_PER_SEC)) * US_PER_SEC;
        int64_t v = ts ? x[k] + off : x[k] * US_PER_DAY;
        int64_t days = expr__floor_div(v, US_PER_DAY), unit = 0, r;
        int y, mo, d;
        date_to_ymd(days, &y, &mo, &d);
        switch (u[k]) {
        case TU_YEAR: r = date_from_ymd(y, 1, 1) * US_PER_DAY; break;
        case TU_QUARTER: r = date_from_ymd(y, (mo - 1) / 3 * 3 + 1, 1) * US_PER_DAY; break;
        case TU_MONTH: r = date_from_ymd(y, mo, 1) * US_PER_DAY; break;
        case TU_WEEK: r = (days - (days + 3 - expr__floor_div(days + 3, 7) * 7)) * US_PER_DAY; break;
        case TU_DAY: unit = US_PER_DAY; break;
        case TU_HOUR: unit = 3600 * US_PER_SEC; break;
        case TU_MINUTE: unit = 60 * US_PER_SEC; break;
        case TU_SECOND: unit = US_PER_SEC; break;
        case TU_MILLISECOND: unit = 1000; break;
        case TU_MICROSECOND: unit = 1; break;
        default: return err_set(cx->err, SL_ERUNTIME, "DATE_TRUNC: unknown unit %lld", (long long)u[k]);
        }
        if (unit)
            r = expr__floor_div(v, unit) * unit;
        if (tstz)
            r = u[k] <= TU_DAY ? tz_local_to_utc_us(zone, r) : r - off;
        out->i[k] = ts ? r : expr__floor_div(r, US_PER_DAY);
    }
    return 0;
}

/* TIMESTAMPDIFF(unit, a, b): whole units from a to b. Month-based units
 * count calendar months (a month is complete when b's day and time of day
 * reach a's), truncated toward zero as Calcite does. */
static int timestampdiff(const Vec *args, int64_t n, EvalCtx *cx, Vec *out, const uint8_t *m)
{
    const int64_t *u = args[0].i, *a = args[1].i, *b = args[2].i;
    static const int64_t us[TU__COUNT] = {0, 0, 0, 7 * US_PER_DAY, US_PER_DAY,
                                          3600 * US_PER_SEC, 60 * US_PER_SEC, US_PER_SEC, 1000, 1};
    for (int64_t k = 0; k < n; k++) {
        out->i[k] = 0;
        if (m[k])
            continue;
        if (u[k] < 0 || u[k] >= TU__COUNT)
            return err_set(cx->err, SL_ERUNTIME, "TIMESTAMPDIFF: unknown unit %lld", (long long)u[k]);
        if (us[u[k]]) {
            __int128 dlt = (__int128)b[k] - a[k];
            out->i[k] = (int64_t)(dlt / us[u[k]]);
            continue;
        }
        int64_t da = expr__floor_div(a[k], US_PER_DAY), db = expr__floor_div(b[k], US_PER_DAY);
        int ya, ma, dya, yb, mb, dyb;
        date_to_ymd(da, &ya, &ma, &dya);
        date_to_ymd(db, &yb, &mb, &dyb);
        int64_t ta = a[k] - da * US_PER_DAY, tb = b[k] - db * US_PER_DAY;
        int64_t months = ((int64_t)yb * 12 + mb) - ((int64_t)ya * 12 + ma);
        if (months > 0 && (dyb < dya || (dyb == dya && tb < ta)))
            months--;
        else if (months < 0 && (dyb > dya || (dyb == dya && tb > ta)))
            months++;
        out->i[k] = u[k] == TU_YEAR ? months / 12 : u[k] == TU_QUARTER ? months / 3 : months;
    }
    return 0;
}

/* TUMBLE / HOP window starts: floor((ts - offset) / size) * size + offset. */
static int tumble_start(const Vec *args, int64_t n, EvalCtx *cx, Vec *out, const uint8_t *m)
{
    const int64_t *x = args[0].i, *sz = args[1].i, *off = args[2].i;
    for (int64_t k = 0; k < n; k++) {
        out->i[k] = 0;
        if (m[k])
            continue;
        if (sz[k] <= 0)
            return err_set(cx->err, SL_ERUNTIME, "window size must be positive");
        __int128 d = (__int128)x[k] - off[k], q = d / sz[k];
        if (d % sz[k] < 0)
            q--;
        __int128 r = q * sz[k] + off[k];
        if (r < INT64_MIN || r > INT64_MAX)
            return err_set(cx->err, SL_ERUNTIME, "window start out of range");
        out->i[k] = (int64_t)r;
    }
    return 0;
}

/* ts AT TIME ZONE zone, both ways. A constant zone was resolved by the
 * binder into an id (BIGINT); a VARCHAR zone is looked up row by row (the
 * cache in tz.c makes a repeat cheap), an unknown name failing the row. */
static int at_time_zone(const Expr *e, const Vec *args, int64_t n, EvalCtx *cx, Vec *out,
                        const uint8_t *m)
{
    bool to_local = e->fn == FN_AT_TZ_LOCAL;
    const int64_t *x = args[0].i;
    for (int64_t k = 0; k < n; k++) {
        out->i[k] = 0;
        if (m[k])
            continue;
        int zone;
        if (args[1].i) {
            zone = (int)args[1].i[k];
        } else {
            Err ze;
            err_init(&ze);
            if ((zone = tz_find(args[1].s[k].p, args[1].s[k].n, &ze)) < 0)
                return err_set(cx->err, SL_ERUNTIME, "AT TIME ZONE: %s", ze.msg);
        }
        out->i[k] = to_local ? tz_utc_to_local_us(zone, x[k]) : tz_local_to_utc_us(zone, x[k]);
    }
    return 0;
}

/* EXTRACT(field FROM interval), PostgreSQL's fields of an interval whose
   days are whole 24 hours (justify_hours) and whose years are 12 months:
   DAY TO SECOND (microseconds) has no years or months, YEAR TO MONTH
   (months) no days or time; the parts keep the value's sign. EPOCH counts
   a year as 365.25 days and a month as 30, as PostgreSQL does. SECOND and
   EPOCH are computed in microseconds (a DECIMAL of scale 6), then cast to
   the result type, as for the other types. */
static int extract_interval(const Expr *e, const Vec *args, int64_t n, EvalCtx *cx, Vec *out,
                            uint8_t *m)
{
    int fn = e->fn;
    bool ym = args[0].t.kind == TK_INTERVAL_YM;
    bool micro = fn == FN_EXTRACT_SECOND || fn == FN_EXTRACT_EPOCH;
    SqlType wt = micro ? (SqlType){TK_DECIMAL, 0, DECIMAL64_MAX_PREC, 6, VARCHAR_UNBOUNDED, 0, {0, 0, 0}}
                       : type_make(TK_BIGINT, false);
    Vec w;
    expr__vec(cx, wt, n, &w);
    int64_t *z = w.i;
    const int64_t *x = args[0].i;
    const int64_t min = 60 * US_PER_SEC;
    for (int64_t k = 0; k < n; k++) {
        int64_t v = m[k] ? 0 : x[k];
        if (ym) {
            switch (fn) {
            case FN_EXTRACT_YEAR: z[k] = v / 12; break;
            case FN_EXTRACT_MONTH: z[k] = v % 12; break;
            case FN_EXTRACT_QUARTER: z[k] = v % 12 / 3 + 1; break;
            case FN_EXTRACT_EPOCH: /* 365.25 * 86400 and 30 * 86400 seconds */
                if (__builtin_mul_overflow(v / 12, 31557600 * US_PER_SEC, &z[k]) ||
                    __builtin_add_overflow(z[k], v % 12 * 2592000 * US_PER_SEC, &z[k]))
                    return err_set(cx->err, SL_ERUNTIME, "EXTRACT(EPOCH) of an interval overflowed");
                break;
            default: z[k] = 0; break;
            }
            continue;
        }
        switch (fn) {
        case FN_EXTRACT_DAY: z[k] = v / US_PER_DAY; break;
        case FN_EXTRACT_HOUR: z[k] = v % US_PER_DAY / (3600 * US_PER_SEC); break;
        case FN_EXTRACT_MINUTE: z[k] = v % (3600 * US_PER_SEC) / min; break;
        case FN_EXTRACT_SECOND:
        case FN_EXTRACT_MICROSECOND: z[k] = v % min; break;
        case FN_EXTRACT_MILLISECOND: z[k] = v % min / 1000; break;
        case FN_EXTRACT_EPOCH: z[k] = v; break;
        case FN_EXTRACT_QUARTER: z[k] = 1; break; /* of its zero months */
        default: z[k] = 0; break;                 /* YEAR, MONTH */
        }
    }
    if (fn == FN_EXTRACT_DOW || fn == FN_EXTRACT_DOY || fn == FN_EXTRACT_WEEK)
        return err_set(cx->err, SL_ERUNTIME, "EXTRACT field %d is not defined for an interval", fn);
    return expr__cast(&w, n, cx, out, m);
}

int expr__fn_time(const Expr *e, const Vec *args, int64_t n, EvalCtx *cx, Vec *out,
                  uint8_t *m)
{
    switch (e->fn) {
    case FN_TZ_OFFSET:
        if (e->na != 2 || !args[0].i || !args[1].i || !out->i)
            return err_set(cx->err, SL_ERUNTIME, "TZ_OFFSET operands of the wrong kind");
        for (int64_t k = 0; k < n; k++) {
            int64_t x = args[0].i[k], off = 0;
            if (!m[k] && x < TZ_US_LIMIT && x > -TZ_US_LIMIT)
                off = tz_offset(args[0].t.len, expr__floor_div(x, US_PER_SEC));
            int64_t part = args[1].i[k];
            out->i[k] = part == 1 ? off / 3600 : part == 2 ? off / 60 % 60 : off;
        }
        return 0;
    case FN_AT_TZ_LOCAL:
    case FN_AT_TZ_INSTANT:
        if (e->na == 2 && args[0].i && (args[1].i || args[1].s) && out->i)
            return at_time_zone(e, args, n, cx, out, m);
        return err_set(cx->err, SL_ERUNTIME, "AT TIME ZONE operands of the wrong kind");
    case FN_TIME_ADD: /* TIME + interval wraps around midnight (Calcite) */
        if (e->na != 2 || !args[0].i || !args[1].i || !out->i)
            return err_set(cx->err, SL_ERUNTIME, "TIME_ADD operands of the wrong kind");
        for (int64_t k = 0; k < n; k++) {
            int64_t r = args[1].i[k] % US_PER_DAY + args[0].i[k];
            out->i[k] = m[k] ? 0 : r - expr__floor_div(r, US_PER_DAY) * US_PER_DAY;
        }
        return 0;
    case FN_TUMBLE_START:
        if (e->na == 3 && args[0].i && args[1].i && args[2].i && out->i)
            return tumble_start(args, n, cx, out, m);
        return err_set(cx->err, SL_ERUNTIME, "TUMBLE_START operands of the wrong kind");
    case FN_ADD_MONTHS:
        if (e->na == 2 && args[0].i && args[1].i && out->i)
            return add_months(args, n, cx, out, m);
        return err_set(cx->err, SL_ERUNTIME, "ADD_MONTHS operands of the wrong kind");
    case FN_DATE_TRUNC:
        if (e->na == 2 && args[0].i && args[1].i && out->i &&
            (args[0].t.kind == TK_DATE || type_is_ts(args[0].t.kind)))
            return date_trunc(args, n, cx, out, m);
        return err_set(cx->err, SL_ERUNTIME, "DATE_TRUNC needs a DATE or TIMESTAMP");
    case FN_TIMESTAMPDIFF:
        if (e->na == 3 && args[0].i && args[1].i && args[2].i && out->i)
            return timestampdiff(args, n, cx, out, m);
        return err_set(cx->err, SL_ERUNTIME, "TIMESTAMPDIFF operands of the wrong kind");
    default: break;
    }
    TypeKind k0 = e->na > 0 ? (TypeKind)args[0].t.kind : TK_NULL;
    int fn = e->fn;
    char tn[48];
    if (type_is_interval(k0) && args[0].i)
        return extract_interval(e, args, n, cx, out, m);
    if (!type_is_temporal(k0) || !args[0].i)
        return err_set(cx->err, SL_ERUNTIME, "EXTRACT needs a DATE, TIME or TIMESTAMP, not %s",
                       type_name(args[0].t, tn, sizeof(tn)));
    bool dated = fn == FN_EXTRACT_YEAR || fn == FN_EXTRACT_MONTH || fn == FN_EXTRACT_DAY ||
                 fn == FN_EXTRACT_DOW || fn == FN_EXTRACT_DOY || fn == FN_EXTRACT_WEEK ||
                 fn == FN_EXTRACT_QUARTER;
    if (k0 == TK_TIME && dated)
        return err_set(cx->err, SL_ERUNTIME, "EXTRACT field %d is not defined for TIME", fn);

    bool micro = fn == FN_EXTRACT_SECOND || fn == FN_EXTRACT_EPOCH;
    SqlType wt = micro ? (SqlType){TK_DECIMAL, 0, DECIMAL64_MAX_PREC, 6, VARCHAR_UNBOUNDED, 0, {0, 0, 0}}
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
    case FN_EXTRACT_WEEK:
        for (int64_t k = 0; k < n; k++)
            z[k] = iso_week(days[k]);
        break;
    case FN_EXTRACT_QUARTER:
        for (int64_t k = 0; k < n; k++) {
            date_to_ymd(days[k], &y, &mo, &d);
            z[k] = (mo - 1) / 3 + 1;
        }
        break;
    case FN_EXTRACT_MILLISECOND:
        for (int64_t k = 0; k < n; k++)
            z[k] = tod[k] % (60 * US_PER_SEC) / 1000;
        break;
    case FN_EXTRACT_MICROSECOND:
        for (int64_t k = 0; k < n; k++)
            z[k] = tod[k] % (60 * US_PER_SEC);
        break;
    default: return err_set(cx->err, SL_ERUNTIME, "unknown EXTRACT field %d", fn);
    }
    return expr__cast(&w, n, cx, out, m);
}
