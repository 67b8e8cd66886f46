/*
 * tests/manager/test_pipes.c - the manager's pipeline records
 * (manager/pipes.c): which names are accepted (never a path), the PUT
 * body's defaults and refusals, the state derived from the supervision
 * fields, and a pipeline written to DIR/NAME.json and read back as a
 * restarted manager does, with its desired state, restarts and error.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/mem.h"
#include "manager/mgr_int.h"

static void names_are_never_paths(void **st)
{
    (void)st;
    const char *good[] = {"bank", "a", "B-2_x", "0"};
    const char *bad[] = {"", "..", ".", "../x", "a/b", "-x", "a b", "a.b", "é", "a\n"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        assert_true(mpipe_name_ok(good[i]));
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_false(mpipe_name_ok(bad[i]));
    char longest[MGR_NAME_MAX + 2];
    memset(longest, 'x', sizeof(longest));
    longest[MGR_NAME_MAX] = 0;
    assert_true(mpipe_name_ok(longest));
    longest[MGR_NAME_MAX] = 'x';
    longest[MGR_NAME_MAX + 1] = 0;
    assert_false(mpipe_name_ok(longest));
}

static Pipe *parse(const char *text, bool persisted, Err *e)
{
    Pipe *p = sl_calloc(1, sizeof(*p));
    snprintf(p->name, sizeof(p->name), "p");
    cJSON *j = cJSON_Parse(text);
    int rc = mpipe_from_json(p, j, persisted, e);
    cJSON_Delete(j);
    if (rc) {
        mpipe_free(p);
        return NULL;
    }
    return p;
}

static void put_body_defaults_and_refusals(void **st)
{
    (void)st;
    Err e = {0};
    Pipe *p = parse("{\"program_code\": \"CREATE TABLE t (x INT);\"}", false, &e);
    assert_non_null(p);
    assert_int_equal(p->workers, 1);
    assert_true(p->storage);
    assert_string_equal(p->ft, "exactly_once");
    assert_true(p->ckpt_secs == 60);
    assert_int_equal(p->want, WANT_STOPPED);
    assert_string_equal(mpipe_state(p), "STOPPED");
    mpipe_free(p);
    const char *bad[] = {
        "[]", "{}", "{\"program_code\": 1}", "{\"program_code\": \"x\", \"extra\": 1}",
        "{\"program_code\": \"x\", \"runtime_config\": {\"workers\": 0}}",
        "{\"program_code\": \"x\", \"runtime_config\": {\"workers\": 2.5}}",
        "{\"program_code\": \"x\", \"runtime_config\": {\"storage\": 3}}",
        "{\"program_code\": \"x\", \"runtime_config\": {\"fault_tolerance\": {\"model\": \"x\"}}}",
        "{\"program_code\": \"x\", \"name\": \"other\"}",
        /* only a persisted file may set the desired state */
        "{\"program_code\": \"x\", \"desired_status\": \"RUNNING\"}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err_clear(&e);
        assert_null(parse(bad[i], false, &e));
        assert_int_equal(e.code, SL_ECONFIG);
    }
}

static void state_follows_the_child(void **st)
{
    (void)st;
    Pipe p = {.want = WANT_RUNNING};
    assert_string_equal(mpipe_state(&p), "UNAVAILABLE");
    p.pid = 42;
    assert_string_equal(mpipe_state(&p), "UNAVAILABLE"); /* port not known yet */
    p.port = 8080;
    assert_string_equal(mpipe_state(&p), "RUNNING");
    p.paused_child = true;
    assert_string_equal(mpipe_state(&p), "PAUSED");
    p.want = WANT_STOPPED;
    assert_string_equal(mpipe_state(&p), "STOPPING");
    p.pid = 0;
    assert_string_equal(mpipe_state(&p), "STOPPED");
    p.failed = true;
    assert_string_equal(mpipe_state(&p), "FAILED");
}

static void saved_and_reloaded(void **st)
{
    (void)st;
    char dir[] = "/tmp/sluice-test-pipes-XXXXXX";
    assert_non_null(mkdtemp(dir));
    Mgr m = {0};
    m.o.dir = dir;
    Err e = {0};
    Pipe *p = parse("{\"program_code\": \"CREATE TABLE t (x INT);\", \"runtime_config\": "
                    "{\"workers\": 3, \"storage\": \"/elsewhere\", \"fault_tolerance\": "
                    "{\"model\": \"at_least_once\", \"checkpoint_interval_secs\": 5}}}",
                    false, &e);
    assert_non_null(p);
    snprintf(p->name, sizeof(p->name), "bank");
    p->want = WANT_PAUSED;
    p->restarts = 4;
    mpipe_set_error(p, "killed by signal %d", 9);
    assert_int_equal(mpipe_save(&m, p, &e), 0);
    assert_int_equal(mpipes_load(&m, &e), 0);
    assert_int_equal(m.np, 1);
    Pipe *q = m.p[0];
    assert_string_equal(q->name, "bank");
    assert_string_equal(q->program, p->program);
    assert_int_equal(q->workers, 3);
    assert_string_equal(q->storage_path, "/elsewhere");
    assert_string_equal(q->ft, "at_least_once");
    assert_true(q->ckpt_secs == 5);
    assert_int_equal(q->want, WANT_PAUSED);
    assert_int_equal(q->restarts, 4);
    assert_string_equal(q->error, "killed by signal 9");
    mpipe_free(q);
    mpipe_free(p);
    sl_free(m.p);
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(names_are_never_paths),
        cmocka_unit_test(put_body_defaults_and_refusals),
        cmocka_unit_test(state_follows_the_child),
        cmocka_unit_test(saved_and_reloaded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
