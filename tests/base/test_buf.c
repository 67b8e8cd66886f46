/*
 * tests/base/test_buf.c - the growable byte buffer: capacity starts at 256
 * bytes and doubles (base/vec.h's rule), formatted text of any length is
 * appended whole through buf_printf and buf_vprintf (the second vsnprintf
 * after growing sees the same arguments), and buf_cstr terminates without
 * counting the NUL.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "base/buf.h"
#include "base/mem.h"

static void test_buf_capacity_starts_at_256_bytes_and_doubles(void **state)
{
    (void)state;
    Buf b = BUF_INIT;
    buf_putc(&b, 'x');
    assert_int_equal(b.cap, 256);
    buf_reserve(&b, 300);
    assert_int_equal(b.cap, 512);
    buf_reserve(&b, 10); /* room already there: no change */
    assert_int_equal(b.cap, 512);
    assert_int_equal(b.n, 1);
    buf_free(&b);
    assert_null(b.p);
}

/* Appends through buf_vprintf, as a caller with its own varargs does. */
static void vappend(Buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(b, fmt, ap);
    va_end(ap);
}

static void test_buf_printf_and_vprintf_append_text_longer_than_the_room(void **state)
{
    (void)state;
    char big[1000];
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = 0;
    Buf b = BUF_INIT;
    buf_printf(&b, "%s-%d", "start", 7);
    vappend(&b, "[%s]", big);
    buf_printf(&b, "%s|%lld", big, 12345678901LL);
    vappend(&b, "%c", '!');
    const char *s = buf_cstr(&b);
    assert_int_equal(b.n, strlen(s));
    assert_int_equal(b.n, 7 + 1001 + 999 + 1 + 11 + 1);
    assert_memory_equal(s, "start-7[", 8);
    assert_int_equal(s[7 + 1000], ']');
    assert_string_equal(s + b.n - 13, "|12345678901!");
    buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buf_capacity_starts_at_256_bytes_and_doubles),
        cmocka_unit_test(test_buf_printf_and_vprintf_append_text_longer_than_the_room),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
