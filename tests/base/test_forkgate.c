/*
 * tests/base/test_forkgate.c - sl_fork (base/forkgate.c): a fork waits
 * until no other thread is inside an allocation, so the child never
 * inherits an allocator lock another thread held. A stand-in lock, held
 * by a thread only while it is inside the gate (as an allocator's lock is
 * held only inside malloc), must be free in the child. The thread is let
 * go from the fork's own wait hook, so nothing depends on timing: without
 * the gate the fork happens while the thread still holds the lock and the
 * child finds it taken.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/forkgate.h"

static pthread_mutex_t standin = PTHREAD_MUTEX_INITIALIZER; /* "the allocator's lock" */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static bool inside, released;
static int waits;

/* A thread inside an allocation until released. */
static void *allocating(void *arg)
{
    (void)arg;
    forkgate_enter();
    pthread_mutex_lock(&standin);
    pthread_mutex_lock(&mu);
    inside = true;
    pthread_cond_broadcast(&cv);
    while (!released)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    pthread_mutex_unlock(&standin);
    forkgate_leave();
    return NULL;
}

static void release(void)
{
    pthread_mutex_lock(&mu);
    released = true;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

static void on_wait(void)
{
    waits++;
    release();
}

/* Fork; the child exits 0 when the stand-in lock is free and it can
   allocate. Returns the child's exit status. */
static int fork_and_check(void)
{
    pid_t pid = sl_fork();
    if (pid == 0) {
        bool free_lock = pthread_mutex_trylock(&standin) == 0;
        char *p = malloc(100);
        free(p);
        _exit(free_lock && p ? 0 : 1);
    }
    assert_true(pid > 0);
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    return WEXITSTATUS(st);
}

static void test_a_fork_waits_for_an_allocation_in_progress(void **state)
{
    (void)state;
    inside = released = false;
    waits = 0;
    forkgate_on_wait = on_wait;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, allocating, NULL), 0);
    pthread_mutex_lock(&mu);
    while (!inside)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    int child = fork_and_check();
    release(); /* (when the fork did not wait) */
    pthread_join(t, NULL);
    forkgate_on_wait = NULL;
    assert_int_equal(child, 0); /* the child found the lock free */
    assert_int_equal(waits, 1);
}

static void test_a_fork_with_no_allocation_in_progress_goes_at_once(void **state)
{
    (void)state;
    waits = 0;
    forkgate_on_wait = on_wait;
    assert_int_equal(fork_and_check(), 0);
    assert_int_equal(fork_and_check(), 0); /* the gate opened again after the first */
    forkgate_on_wait = NULL;
    assert_int_equal(waits, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_fork_waits_for_an_allocation_in_progress),
        cmocka_unit_test(test_a_fork_with_no_allocation_in_progress_goes_at_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
