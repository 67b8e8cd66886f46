/*
 * tests/io/format_test.h - what the format tests (test_csv.c, test_json.c)
 * share: column types written briefly and a check of a parsed string.
 * Header-only, included after cmocka.h.
 */
#ifndef SL_TESTS_IO_FORMAT_TEST_H
#define SL_TESTS_IO_FORMAT_TEST_H

#include <string.h>

#include "base/arena.h"
#include "base/buf.h"
#include "expr/text.h"
#include "io/format.h"

static inline SqlType ty(TypeKind k, bool nullable) { return type_make(k, nullable); }

static inline SqlType dec(int p, int s, bool nullable)
{
    SqlType t = type_make(TK_DECIMAL, nullable);
    t.prec = (uint8_t)p;
    t.scale = (uint8_t)s;
    return t;
}

static inline void expect_str(Str s, const char *want)
{
    if (s.n != strlen(want) || memcmp(s.p, want, s.n) != 0)
        fail_msg("got \"%.*s\" (%u bytes), want \"%s\"", (int)s.n, s.p, s.n, want);
}

#endif
