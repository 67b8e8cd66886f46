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
 * as if they were an encoding, also to the builders and operators (||,
 * @>, ?, jsonb_set, json_build_object's member sorting) and to the
 * conversions to ARRAY and MAP types. Seeds: fuzz/corpus/variant/.
 */
#include "fuzz.h"

#include "base/arena.h"
#include "expr/nested.h"
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
    /* nested targets: INT ARRAY ARRAY, MAP<VARCHAR, INT>; back to VARIANT */
    SqlType mt[2] = {type_make(TK_VARCHAR, true), type_make(TK_INT, true)};
    SqlType nested[2] = {type_array(type_array(type_make(TK_INT, true), true), true),
                         type_nested(TK_MAP, nest_intern(TK_MAP, NULL, 2, NULL, mt), true)};
    for (size_t k = 0; k < 2; k++) {
        Vec out;
        vec_init(&out, a, nested[k], 1);
        if (var_to_vec(v, &out, 0, a)) {
            buf_reset(&t);
            var_from_vec(&out, 0, &t);
        }
    }
    /* the builders and operators: in bounds, and canonical on valid input */
    buf_reset(&t);
    var_concat(v, v, &t);
    (void)var_contains(v, v);
    (void)var_exists(v, "a", 1);
    (void)var_array_length(v);
    Str path[2] = {{"a", 1}, {"-1", 2}};
    buf_reset(&t);
    (void)var_set_path(v, path, 2, v, true, &t);
    buf_reset(&t);
    var_put_object(&t, (const uint8_t *)v.p, v.n);
    buf_free(&t);
}

/* Abort unless encoding d prints as text that parses back to d. */
static void canonical(const Buf *d)
{
    Buf e = BUF_INIT, f = BUF_INIT;
    var_to_json((Str){(const char *)d->p, (uint32_t)d->n}, &e);
    if (var_parse_json((const char *)e.p, e.n, &f) || f.n != d->n || memcmp(f.p, d->p, d->n))
        abort();
    buf_free(&e);
    buf_free(&f);
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
        /* built values are canonical: parsing their text gives their bytes */
        Str path[1] = {{"k", 1}};
        Buf d = BUF_INIT;
        var_concat(v, v, &d);
        canonical(&d);
        buf_reset(&d);
        if (var_set_path(v, path, 1, v, true, &d))
            canonical(&d);
        buf_free(&d);
    }
    decode((Str){(const char *)data, (uint32_t)size}, a);
    buf_free(&b);
    buf_free(&t);
    buf_free(&c);
    arena_free(a);
    return 0;
}
