/*
 * tests/cluster/test_net.c - net_fake, the stand-in for MPI that lets one
 * process play a host of a scale-out job (fuzz/fuzz_hostmsg.c): exchanges
 * reach the function with what this host sends, receive what it gives,
 * and turning it off returns to the single-host state.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "cluster/net.h"

typedef struct Seen {
    int calls;
    size_t sent_to_0;
} Seen;

static void answer(void *ctx, const Buf *send, Buf *recv)
{
    Seen *s = ctx;
    s->calls++;
    s->sent_to_0 = send[0].n;
    buf_append(&recv[0], "cmd", 3);
}

static void test_a_faked_host_exchanges_through_the_function(void **state)
{
    (void)state;
    assert_false(net_active());
    Seen seen = {0};
    net_fake(3, 1, answer, &seen);
    assert_true(net_active());
    assert_int_equal(net_hosts(), 3);
    assert_int_equal(net_host(), 1);
    assert_string_equal(net_host_name(0), "localhost");
    Buf send[3] = {BUF_INIT, BUF_INIT, BUF_INIT}, recv[3] = {BUF_INIT, BUF_INIT, BUF_INIT};
    buf_append(&send[0], "reply", 5);
    buf_append(&recv[2], "stale", 5);
    net_exchange(send, recv);
    assert_int_equal(seen.calls, 1);
    assert_int_equal(seen.sent_to_0, 5);
    assert_int_equal(recv[0].n, 3);
    assert_memory_equal(recv[0].p, "cmd", 3);
    assert_int_equal(recv[2].n, 0); /* every receive buffer starts empty */
    net_fake(0, 0, NULL, NULL);
    assert_false(net_active());
    assert_int_equal(net_hosts(), 1);
    assert_int_equal(net_host(), 0);
    for (int h = 0; h < 3; h++) {
        buf_free(&send[h]);
        buf_free(&recv[h]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_faked_host_exchanges_through_the_function),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
