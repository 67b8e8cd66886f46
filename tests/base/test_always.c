/*
 * tests/base/test_always.c - the ALWAYS/NEVER invariant macros of
 * base/base.h: in a release build they return the condition (the caller's
 * recovery runs); in a debug build (SL_DEBUG, as the tests are built) a
 * broken invariant panics. base.h is read twice here, first without
 * SL_DEBUG, to test both definitions in one program.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

/* the release definitions */
#pragma push_macro("SL_DEBUG")
#undef SL_DEBUG
#include "base/base.h"
static int release_always(int x) { return ALWAYS(x); }
static int release_never(int x) { return NEVER(x); }
#pragma pop_macro("SL_DEBUG")

/* the debug definitions */
#undef SL_BASE_BASE_H
#undef ALWAYS
#undef NEVER
#ifndef SL_DEBUG
#define SL_DEBUG 1
#endif
#include "base/base.h"

static int evaluations;
static int counted(int v)
{
    evaluations++;
    return v;
}

static void test_release_builds_return_the_condition_and_go_on(void **state)
{
    (void)state;
    assert_int_equal(release_always(1), 1);
    assert_int_equal(release_always(0), 0);
    assert_int_equal(release_never(0), 0);
    assert_int_equal(release_never(7), 1);
}

static void test_holding_invariants_pass_and_evaluate_once(void **state)
{
    (void)state;
    evaluations = 0;
    assert_true(ALWAYS(counted(3) == 3));
    assert_false(NEVER(counted(0)));
    assert_int_equal(evaluations, 2);
}

/* Run f in a child with stderr closed; its termination status. */
static int in_child(void (*f)(void))
{
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        freopen("/dev/null", "w", stderr);
        f();
        _exit(0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return status;
}

static volatile int one = 1;
static void broken_always(void) { (void)ALWAYS(one == 2); }
static void broken_never(void) { (void)NEVER(one == 1); }

static void test_a_broken_invariant_panics_in_debug_builds(void **state)
{
    (void)state;
    int st = in_child(broken_always);
    assert_true(WIFSIGNALED(st));
    assert_int_equal(WTERMSIG(st), SIGABRT);
    st = in_child(broken_never);
    assert_true(WIFSIGNALED(st));
    assert_int_equal(WTERMSIG(st), SIGABRT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_release_builds_return_the_condition_and_go_on),
        cmocka_unit_test(test_holding_invariants_pass_and_evaluate_once),
        cmocka_unit_test(test_a_broken_invariant_panics_in_debug_builds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
