/*
 * manager/pipes.c - the pipelines as the manager keeps them: names, the
 * PUT body's JSON (program_code, runtime_config) checked field by field,
 * the API's view of a pipeline with its state, and persistence. Each
 * pipeline is DIR/NAME.json (the PUT body plus desired_status,
 * restart_count and last_error), written to a temporary file, synced and
 * renamed, so a manager killed at any point reloads either the old or the
 * new one; DIR/NAME/ holds program.sql (what the child runs), its log,
 * its pid file and, by default, its storage.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../base/mem.h"
#include "../base/vec.h"
#include "mgr_int.h"

double mgr_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

bool mpipe_name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > MGR_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-'))
            return false;
    }
    return name[0] != '-';
}

Pipe *mpipe_find(Mgr *m, const char *name)
{
    for (int i = 0; i < m->np; i++)
        if (!strcmp(m->p[i]->name, name))
            return m->p[i];
    return NULL;
}

void mpipe_free(Pipe *p)
{
    if (!p)
        return;
    sl_free(p->program);
    sl_free(p->storage_path);
    sl_free(p->error);
    sl_free(p);
}

void mpipe_set_error(Pipe *p, const char *fmt, ...)
{
    char b[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b, sizeof(b), fmt, ap);
    va_end(ap);
    sl_free(p->error);
    p->error = sl_strdup(b);
}

void mpipe_path(const Mgr *m, const Pipe *p, const char *leaf, char *b, size_t n)
{
    snprintf(b, n, "%s/%s%s%s", m->o.dir, p->name, leaf ? "/" : "", leaf ? leaf : "");
}

static const char *want_name(Want w)
{
    return w == WANT_RUNNING ? "RUNNING" : w == WANT_PAUSED ? "PAUSED" : "STOPPED";
}

const char *mpipe_state(const Pipe *p)
{
    if (p->failed)
        return "FAILED";
    if (p->want == WANT_STOPPED)
        return p->pid ? "STOPPING" : "STOPPED";
    if (!p->pid || !p->port || p->term_sent)
        return "UNAVAILABLE";
    return p->paused_child ? "PAUSED" : "RUNNING";
}

void mpipe_note_state(Pipe *p)
{
    const char *st = mpipe_state(p);
    if (p->nhist && !strcmp(p->hist[p->nhist - 1].state, st))
        return;
    if (p->nhist == (int)ARRAY_LEN(p->hist)) {
        memmove(p->hist, p->hist + 1, sizeof(p->hist[0]) * (ARRAY_LEN(p->hist) - 1));
        p->nhist--;
    }
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    p->hist[p->nhist].state = st;
    p->hist[p->nhist].at_ms = (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
    p->nhist++;
}

#define FAIL(...) err_set(err, SL_ECONFIG, __VA_ARGS__)

static int rc_from_json(Pipe *p, const cJSON *rc, Err *err)
{
    const cJSON *v;
    cJSON_ArrayForEach(v, rc)
    {
        const char *k = v->string;
        if (!strcmp(k, "workers")) {
            if (!cJSON_IsNumber(v) || v->valuedouble < 1 || v->valuedouble > 256 ||
                v->valuedouble != (int)v->valuedouble)
                return FAIL("runtime_config.workers must be an integer from 1 to 256");
            p->workers = (int)v->valuedouble;
        } else if (!strcmp(k, "hosts")) {
            if (!cJSON_IsNumber(v) || v->valuedouble < 1 || v->valuedouble > 256 ||
                v->valuedouble != (int)v->valuedouble)
                return FAIL("runtime_config.hosts must be an integer from 1 to 256");
            p->hosts = (int)v->valuedouble;
        } else if (!strcmp(k, "storage")) {
            sl_free(p->storage_path);
            p->storage_path = NULL;
            if (cJSON_IsBool(v))
                p->storage = cJSON_IsTrue(v);
            else if (cJSON_IsNull(v))
                p->storage = false;
            else if (cJSON_IsString(v) && *v->valuestring && strlen(v->valuestring) < 4096) {
                p->storage = true;
                p->storage_path = sl_strdup(v->valuestring);
            } else
                return FAIL("runtime_config.storage must be true, false, null or a path "
                            "(a directory or s3://BUCKET/PREFIX)");
        } else if (!strcmp(k, "fault_tolerance")) {
            if (cJSON_IsNull(v)) {
                snprintf(p->ft, sizeof(p->ft), "none");
                continue;
            }
            if (!cJSON_IsObject(v))
                return FAIL("runtime_config.fault_tolerance must be an object {\"model\", "
                            "\"checkpoint_interval_secs\", \"checkpoint_timeout_secs\"} or null");
            const cJSON *f;
            cJSON_ArrayForEach(f, v)
            {
                if (!strcmp(f->string, "model")) {
                    const char *s = cJSON_IsString(f) ? f->valuestring
                                    : cJSON_IsNull(f) ? "none" : "";
                    if (strcmp(s, "exactly_once") && strcmp(s, "at_least_once") &&
                        strcmp(s, "none"))
                        return FAIL("fault_tolerance.model must be exactly_once, "
                                    "at_least_once or none");
                    snprintf(p->ft, sizeof(p->ft), "%s", s);
                } else if (!strcmp(f->string, "checkpoint_interval_secs")) {
                    if (!cJSON_IsNumber(f) || f->valuedouble < 0 || f->valuedouble > 1e7)
                        return FAIL("fault_tolerance.checkpoint_interval_secs must be a "
                                    "number of seconds (>= 0; 0: only on request)");
                    p->ckpt_secs = f->valuedouble;
                } else if (!strcmp(f->string, "checkpoint_timeout_secs")) {
                    if (!cJSON_IsNumber(f) || f->valuedouble < 0 || f->valuedouble > 1e7)
                        return FAIL("fault_tolerance.checkpoint_timeout_secs must be a "
                                    "number of seconds (>= 0; 0: no limit)");
                    p->ckpt_timeout = f->valuedouble;
                } else
                    return FAIL("unknown setting fault_tolerance.%.100s (known: model, "
                                "checkpoint_interval_secs, checkpoint_timeout_secs)", f->string);
            }
        } else
            return FAIL("unknown setting runtime_config.%.100s (known: workers, hosts, "
                        "storage, fault_tolerance)", k);
    }
    return 0;
}

int mpipe_from_json(Pipe *p, const cJSON *j, bool persisted, Err *err)
{
    if (!cJSON_IsObject(j))
        return FAIL("the body must be a JSON object {\"program_code\", \"runtime_config\"}");
    p->workers = 1;
    p->hosts = 1;
    p->storage = true;
    snprintf(p->ft, sizeof(p->ft), "exactly_once");
    p->ckpt_secs = 60;
    p->ckpt_timeout = 3600;
    bool has_program = false;
    const cJSON *v;
    cJSON_ArrayForEach(v, j)
    {
        const char *k = v->string;
        if (!strcmp(k, "program_code")) {
            if (!cJSON_IsString(v))
                return FAIL("program_code must be a string (the SQL program)");
            sl_free(p->program);
            p->program = sl_strdup(v->valuestring);
            has_program = true;
        } else if (!strcmp(k, "runtime_config")) {
            if (!cJSON_IsObject(v))
                return FAIL("runtime_config must be an object");
            if (rc_from_json(p, v, err))
                return err->code;
        } else if (!strcmp(k, "name") || !strcmp(k, "description")) {
            if (!cJSON_IsString(v))
                return FAIL("%s must be a string", k);
            if (!strcmp(k, "name") && strcmp(v->valuestring, p->name))
                return FAIL("the body names \"%.100s\" but the path names \"%s\"",
                            v->valuestring, p->name);
        } else if (persisted && !strcmp(k, "desired_status") && cJSON_IsString(v)) {
            const char *s = v->valuestring;
            p->want = !strcmp(s, "RUNNING") ? WANT_RUNNING
                      : !strcmp(s, "PAUSED") ? WANT_PAUSED : WANT_STOPPED;
        } else if (persisted && !strcmp(k, "restart_count") && cJSON_IsNumber(v)) {
            p->restarts = v->valueint;
        } else if (persisted && !strcmp(k, "last_error")) {
            sl_free(p->error);
            p->error = cJSON_IsString(v) ? sl_strdup(v->valuestring) : NULL;
        } else if (persisted && !strcmp(k, "failed")) {
            p->failed = cJSON_IsTrue(v);
        } else
            return FAIL("unknown field \"%.100s\" (known: name, description, program_code, "
                        "runtime_config)", k);
    }
    if (!has_program)
        return FAIL("program_code is missing");
    return 0;
}

#undef FAIL

static cJSON *rc_to_json(const Pipe *p)
{
    cJSON *rc = cJSON_CreateObject();
    cJSON_AddNumberToObject(rc, "workers", p->workers);
    cJSON_AddNumberToObject(rc, "hosts", p->hosts);
    if (p->storage_path)
        cJSON_AddStringToObject(rc, "storage", p->storage_path);
    else
        cJSON_AddBoolToObject(rc, "storage", p->storage);
    cJSON *ft = cJSON_AddObjectToObject(rc, "fault_tolerance");
    cJSON_AddStringToObject(ft, "model", p->ft);
    cJSON_AddNumberToObject(ft, "checkpoint_interval_secs", p->ckpt_secs);
    cJSON_AddNumberToObject(ft, "checkpoint_timeout_secs", p->ckpt_timeout);
    return rc;
}

cJSON *mpipe_to_json(const Pipe *p, bool full)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "name", p->name);
    if (full)
        cJSON_AddStringToObject(j, "program_code", p->program ? p->program : "");
    cJSON_AddItemToObject(j, "runtime_config", rc_to_json(p));
    cJSON_AddStringToObject(j, "desired_status", want_name(p->want));
    cJSON_AddStringToObject(j, "state", mpipe_state(p));
    cJSON_AddNumberToObject(j, "restart_count", p->restarts);
    if (p->error)
        cJSON_AddStringToObject(j, "last_error", p->error);
    else
        cJSON_AddNullToObject(j, "last_error");
    if (p->pid)
        cJSON_AddNumberToObject(j, "pid", p->pid);
    else
        cJSON_AddNullToObject(j, "pid");
    if (p->port && p->pid)
        cJSON_AddNumberToObject(j, "port", p->port);
    else
        cJSON_AddNullToObject(j, "port");
    cJSON *h = cJSON_AddArrayToObject(j, "state_history");
    for (int i = 0; i < p->nhist; i++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "state", p->hist[i].state);
        cJSON_AddNumberToObject(e, "at_ms", (double)p->hist[i].at_ms);
        cJSON_AddItemToArray(h, e);
    }
    return j;
}

static int write_atomic(const char *path, const char *text, Err *err)
{
    char tmp[4200];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return err_set(err, SL_EIO, "cannot write %s: %s", tmp, strerror(errno));
    size_t n = strlen(text), off = 0;
    while (off < n) {
        ssize_t w = write(fd, text + off, n - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = errno;
            close(fd);
            unlink(tmp);
            return err_set(err, SL_EIO, "cannot write %s: %s", tmp, strerror(e));
        }
        off += (size_t)w;
    }
    if (fsync(fd) || close(fd) || rename(tmp, path)) {
        int e = errno;
        unlink(tmp);
        return err_set(err, SL_EIO, "cannot write %s: %s", path, strerror(e));
    }
    return 0;
}

static void sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

int mpipe_save(Mgr *m, Pipe *p, Err *err)
{
    char path[4200];
    mpipe_path(m, p, NULL, path, sizeof(path));
    if (mkdir(path, 0755) && errno != EEXIST)
        return err_set(err, SL_EIO, "cannot create %s: %s", path, strerror(errno));
    mpipe_path(m, p, "program.sql", path, sizeof(path));
    int rc = write_atomic(path, p->program, err);
    if (rc)
        return rc;
    cJSON *j = mpipe_to_json(p, true);
    cJSON_DeleteItemFromObject(j, "state");
    cJSON_DeleteItemFromObject(j, "pid");
    cJSON_DeleteItemFromObject(j, "port");
    cJSON_DeleteItemFromObject(j, "state_history");
    cJSON_AddBoolToObject(j, "failed", p->failed);
    char *text = cJSON_Print(j);
    cJSON_Delete(j);
    snprintf(path, sizeof(path), "%s/%s.json", m->o.dir, p->name);
    rc = write_atomic(path, text, err);
    free(text);
    if (!rc)
        sync_dir(m->o.dir);
    return rc;
}

static char *read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    Buf b = BUF_INIT;
    char tmp[8192];
    size_t k;
    while ((k = fread(tmp, 1, sizeof(tmp), f)) > 0)
        buf_append(&b, tmp, k);
    fclose(f);
    buf_cstr(&b);
    return (char *)b.p;
}

int mpipes_load(Mgr *m, Err *err)
{
    DIR *d = opendir(m->o.dir);
    if (!d)
        return err_set(err, SL_EIO, "cannot read %s: %s", m->o.dir, strerror(errno));
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t n = strlen(de->d_name);
        if (n < 6 || strcmp(de->d_name + n - 5, ".json"))
            continue;
        char name[MGR_NAME_MAX + 8];
        if (n - 5 > MGR_NAME_MAX)
            continue;
        snprintf(name, sizeof(name), "%.*s", (int)(n - 5), de->d_name);
        if (!mpipe_name_ok(name))
            continue;
        char path[4200];
        snprintf(path, sizeof(path), "%s/%s", m->o.dir, de->d_name);
        char *text = read_all(path);
        cJSON *j = text ? cJSON_Parse(text) : NULL;
        sl_free(text);
        Pipe *p = sl_calloc(1, sizeof(*p));
        snprintf(p->name, sizeof(p->name), "%.*s", MGR_NAME_MAX, name);
        Err e = {0};
        if (mpipe_from_json(p, j, true, &e)) {
            fprintf(stderr, "sluice: manager: %s is skipped: %s\n", path, j ? e.msg : "not JSON");
            mpipe_free(p);
        } else
            *VEC_PUSH(m->p, m->np, m->cap) = p;
        cJSON_Delete(j);
    }
    closedir(d);
    return 0;
}
