/*
 * pipeline/progstore.c - reading the program a storage holds
 * (progstore.h): the newest manifest that verifies, its "program" checked
 * against its "fingerprint". Read only: a local directory is opened
 * without its lock (store_open_member) after checking that it exists, so
 * nothing is created; an s3:// storage is read through the store's
 * temporary cache.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

#include <cjson/cJSON.h>

#include "../base/mem.h"
#include "../storage/storage.h"
#include "progstore.h"

static int from_manifest(const char *where, const char *json, uint64_t s, char **text, Err *err)
{
    cJSON *m = cJSON_Parse(json);
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(m, "program");
    const cJSON *fp = cJSON_GetObjectItemCaseSensitive(m, "fingerprint");
    char mine[32] = "";
    int rc = 0;
    if (cJSON_IsString(p))
        snprintf(mine, sizeof(mine), "%016" PRIx64,
                 (uint64_t)XXH64(p->valuestring, strlen(p->valuestring), 0));
    if (!m)
        rc = err_set(err, SL_EIO, "storage %s: manifest-%" PRIu64 ".json is not JSON", where, s);
    else if (!cJSON_IsString(p))
        rc = err_set(err, SL_ECONFIG,
                     "storage %s: the checkpoint of step %" PRIu64 " does not hold its "
                     "program's text (it was written by an older sluice); compare the files "
                     "with `sluice check OLD.sql NEW.sql`",
                     where, s);
    else if (!cJSON_IsString(fp) || strcmp(fp->valuestring, mine))
        rc = err_set(err, SL_EIO,
                     "storage %s: the program in the checkpoint of step %" PRIu64 " does not "
                     "match its fingerprint (%s; the text hashes to %s)",
                     where, s, cJSON_IsString(fp) ? fp->valuestring : "missing", mine);
    else
        *text = sl_strdup(p->valuestring);
    cJSON_Delete(m);
    return rc;
}

/* The newest manifest that verifies in where, read only, to *json
   (sl_free) and its step to *s. */
static int latest(const char *where, char **json, uint64_t *s, char **notes, Err *err)
{
    Store *st = NULL;
    int rc;
    *json = NULL;
    *s = 0;
    if (strncmp(where, "s3://", 5)) {
        struct stat sb;
        if (stat(where, &sb))
            return err_set(err, SL_EIO, "storage %s: %s", where, strerror(errno));
        if (!S_ISDIR(sb.st_mode))
            return err_set(err, SL_EIO, "storage %s: not a directory", where);
        rc = store_open_member(where, &st, err); /* no lock, no clean-up */
    } else
        rc = store_open_url(where, &st, err);
    if (rc)
        return rc;
    rc = store_latest_manifest(st, s, json, notes, err);
    if (!rc && !*json)
        rc = err_set(err, SL_ECONFIG,
                     "storage %s holds no checkpoint, so no program to compare with (a "
                     "pipeline writes one at each checkpoint and when it stops)",
                     where);
    store_close(st);
    return rc;
}

int progstore_read(const char *where, char **text, int64_t *step, char **notes, Err *err)
{
    char *json = NULL;
    uint64_t s = 0;
    *text = NULL;
    *notes = NULL;
    *step = 0;
    int rc = latest(where, &json, &s, notes, err);
    if (!rc && !(rc = from_manifest(where, json, s, text, err)))
        *step = (int64_t)s;
    sl_free(json);
    return rc;
}

int progstore_circuit(const char *where, char fp[32], char shape[32], Err *err)
{
    char *json = NULL, *notes = NULL;
    uint64_t s = 0;
    fp[0] = shape[0] = 0;
    int rc = latest(where, &json, &s, &notes, err);
    sl_free(notes);
    if (rc) {
        sl_free(json);
        return rc;
    }
    cJSON *m = cJSON_Parse(json);
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(m, "fingerprint");
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(m, "circuit");
    if (!m)
        rc = err_set(err, SL_EIO, "storage %s: manifest-%" PRIu64 ".json is not JSON", where, s);
    if (cJSON_IsString(f))
        snprintf(fp, 32, "%s", f->valuestring);
    if (cJSON_IsString(c))
        snprintf(shape, 32, "%s", c->valuestring);
    cJSON_Delete(m);
    sl_free(json);
    return rc;
}
