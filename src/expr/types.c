/*
 * expr/types.c - type names, integer ranges, powers of ten.
 */
#include "types.h"

#include "nested.h"

#include <stdio.h>

void type_int_range(TypeKind k, int64_t *lo, int64_t *hi)
{
    switch (k) {
    case TK_BOOL: *lo = 0; *hi = 1; break;
    case TK_TINYINT: *lo = INT8_MIN; *hi = INT8_MAX; break;
    case TK_SMALLINT: *lo = INT16_MIN; *hi = INT16_MAX; break;
    case TK_INT: *lo = INT32_MIN; *hi = INT32_MAX; break;
    default: *lo = INT64_MIN; *hi = INT64_MAX; break;
    }
}

const char *type_name(SqlType t, char *buf, size_t size)
{
    switch ((TypeKind)t.kind) {
    case TK_NULL: snprintf(buf, size, "NULL"); break;
    case TK_BOOL: snprintf(buf, size, "BOOLEAN"); break;
    case TK_TINYINT: snprintf(buf, size, "TINYINT"); break;
    case TK_SMALLINT: snprintf(buf, size, "SMALLINT"); break;
    case TK_INT: snprintf(buf, size, "INT"); break;
    case TK_BIGINT: snprintf(buf, size, "BIGINT"); break;
    case TK_DECIMAL: snprintf(buf, size, "DECIMAL(%d,%d)", t.prec, t.scale); break;
    case TK_REAL: snprintf(buf, size, "REAL"); break;
    case TK_DOUBLE: snprintf(buf, size, "DOUBLE"); break;
    case TK_CHAR: snprintf(buf, size, "CHAR(%d)", t.len); break;
    case TK_VARCHAR:
        if (t.len == VARCHAR_UNBOUNDED)
            snprintf(buf, size, "VARCHAR");
        else
            snprintf(buf, size, "VARCHAR(%d)", t.len);
        break;
    case TK_DATE: snprintf(buf, size, "DATE"); break;
    case TK_TIME: snprintf(buf, size, "TIME"); break;
    case TK_TIMESTAMP: snprintf(buf, size, "TIMESTAMP"); break;
    case TK_TIMESTAMPTZ: snprintf(buf, size, "TIMESTAMP WITH TIME ZONE"); break;
    case TK_INTERVAL_DT: snprintf(buf, size, "INTERVAL DAY TO SECOND"); break;
    case TK_INTERVAL_YM: snprintf(buf, size, "INTERVAL YEAR TO MONTH"); break;
    case TK_VARIANT: snprintf(buf, size, "VARIANT"); break;
    case TK_ARRAY: {
        char eb[64];
        snprintf(buf, size, "%s ARRAY", type_name(type_elem(t), eb, sizeof(eb)));
        break;
    }
    case TK_ROW:
    case TK_MAP: nest_type_name(t, buf, size); break;
    }
    return buf;
}

int64_t pow10_i64(int n)
{
    static const int64_t p[] = {1LL, 10LL, 100LL, 1000LL, 10000LL, 100000LL, 1000000LL,
                                10000000LL, 100000000LL, 1000000000LL, 10000000000LL,
                                100000000000LL, 1000000000000LL, 10000000000000LL,
                                100000000000000LL, 1000000000000000LL, 10000000000000000LL,
                                100000000000000000LL, 1000000000000000000LL};
    return (n >= 0 && n <= 18) ? p[n] : 0;
}

i128 pow10_i128(int n)
{
    if (n < 0 || n > 38)
        return 0;
    i128 r = 1;
    for (; n > 18; n -= 18)
        r *= pow10_i64(18);
    return r * pow10_i64(n);
}
