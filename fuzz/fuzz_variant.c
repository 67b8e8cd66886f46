/*
 * fuzz/fuzz_variant.c - VARIANT values (src/expr/variant.c): the JSON
 * parser behind PARSE_JSON, VARIANT columns of JSON/CSV input and text
 * casts, and the decoders of the encoding (printing, member and element
 * access, conversions to SQL types), which must stay in bounds whatever
 * bytes they are given.
 *
 * Input: bytes. Parsed as JSON text; when accepted, the encoding holds no
 * NUL, prints as JSON that parses back to the same bytes, and its members
 * and elements are read. The same bytes are also handed to the decoders
 * as if they were an encoding. Seeds: fuzz/corpus/variant/.
 */
#include "fuzz.h"

#include "base/arena.h"
#include "expr/variant.h"

static void decode(Str v, Arena *a)
{
    Buf t = BUF_INIT;
    Str m;
    var_to_json(v, &t);
    (void)var_kind(v);
    (void)var_get_key(v, "a", 1, &m);
    (void)var_get_index(v, 0, &m);
    (void)var_get_index(v, -1, &m);
    (void)var_get_string(v, a, &m);
    static const TypeKind kinds[] = {TK_INT, TK_DOUBLE, TK_VARCHAR, TK_BOOL, TK_DATE};
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        Vec out;
        vec_init(&out, a, type_make(kinds[k], true), 1);
        (void)var_to_vec(v, &out, 0, a);
    }
    buf_free(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    Arena *a = arena_new(1 << 12);
    Buf b = BUF_INIT, t = BUF_INIT, c = BUF_INIT;
    if (!var_parse_json((const char *)data, size, &b)) {
        if (memchr(b.p, 0, b.n))
            abort();
        Str v = {(const char *)b.p, (uint32_t)b.n};
        var_to_json(v, &t);
        if (var_parse_json((const char *)t.p, t.n, &c) || c.n != b.n || memcmp(c.p, b.p, b.n))
            abort();
        decode(v, a);
    }
    decode((Str){(const char *)data, (uint32_t)size}, a);
    buf_free(&b);
    buf_free(&t);
    buf_free(&c);
    arena_free(a);
    return 0;
}
