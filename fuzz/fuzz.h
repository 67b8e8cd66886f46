/*
 * fuzz/fuzz.h - what the libFuzzer targets (fuzz/fuzz_*.c) share: a
 * program compiled once, a scratch directory of their own, and the record
 * framing their inputs use. Header-only: each target is one file plus this.
 *
 * Inputs that hold several records frame them as u16 little-endian length
 * + bytes (a short final record takes what is left), so that mutations
 * keep most records whole; see fz_next.
 */
#ifndef SL_FUZZ_FUZZ_H
#define SL_FUZZ_FUZZ_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/err.h"
#include "circuit/circuit.h"
#include "io/format.h"
#include "sql/sql.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Compile a program the target depends on; any error is the harness's bug. */
static inline Circuit *fz_compile(const char *sql)
{
    Circuit *c = NULL;
    Err e;
    err_init(&e);
    if (circuit_compile(sql, &c, &e)) {
        fprintf(stderr, "fuzz: the harness program does not compile: %s\n", e.msg);
        abort();
    }
    return c;
}

/* The format targets' tables (fuzz_csv.c, fuzz_json.c): n has a column of
   every scalar type, all nullable; m_sql is the target's own table m; x has
   arrays and TIMESTAMPTZ (read in a zone with DST, the program's). */
#define FZ_FORMAT_PROGRAM(m_sql)                                                                 \
    "SET TIME ZONE 'America/New_York';\n"                                                       \
    "CREATE TABLE n (b BOOLEAN, ti TINYINT, si SMALLINT, i INT, bi BIGINT, d DECIMAL(12,3),\n"  \
    "  r REAL, f DOUBLE, c CHAR(3), v VARCHAR(8), s VARCHAR, dt DATE, tm TIME,\n"               \
    "  ts TIMESTAMP);\n" m_sql                                                                  \
    "CREATE TABLE x (ia INT ARRAY, sa VARCHAR ARRAY, da DECIMAL(5,2)[], ba BOOLEAN[],\n"        \
    "  fa DOUBLE[], ta TIMESTAMP ARRAY, tz TIMESTAMPTZ, tza TIMESTAMPTZ[] NOT NULL);\n"

/* A format target's table: program compiled on the first call (into *c),
   the relation that bit 0 of the input's first byte chooses (*rel) and its
   row schema (*s). False for an empty input. */
static inline bool fz_format_table(Circuit **c, const char *program, const uint8_t *data,
                                   size_t size, int *rel, RowSchema *s)
{
    if (!*c)
        *c = fz_compile(program);
    if (size < 1)
        return false;
    *rel = data[0] & 0x80 ? 2 : data[0] & 1;
    const Relation *r = &(*c)->rels[*rel];
    *s = (RowSchema){r->ncol, (const char *const *)r->colnames, r->types};
    return true;
}

static inline void fz_clear(const char *dir);

/* The directories fz_dir made, removed at exit. */
static char *fz_dirs[8];

static inline void fz_remove_dirs(void)
{
    for (int i = 0; i < 8 && fz_dirs[i]; i++) {
        fz_clear(fz_dirs[i]);
        rmdir(fz_dirs[i]);
    }
}

/* A fresh directory under TMPDIR (default /tmp) for this process,
   removed when it exits normally. */
static inline const char *fz_dir(const char *what)
{
    char path[256];
    const char *t = getenv("TMPDIR");
    snprintf(path, sizeof(path), "%s/sluice-fuzz-%s-XXXXXX", t && *t ? t : "/tmp", what);
    if (!mkdtemp(path)) {
        perror("fuzz: mkdtemp");
        abort();
    }
    int i = 0;
    while (i < 7 && fz_dirs[i])
        i++;
    if (!i)
        atexit(fz_remove_dirs);
    fz_dirs[i] = strdup(path);
    return fz_dirs[i];
}

/* Remove every file of dir (not dir itself; no subdirectories expected). */
static inline void fz_clear(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    char p[512];
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
        unlink(p);
    }
    closedir(d);
}

static inline void fz_write(const char *dir, const char *name, const void *p, size_t n)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(p, 1, n, f) != n)) {
        perror(path);
        abort();
    }
    fclose(f);
}

/* Append the bytes of file dir/name to b. */
static inline void fz_read(const char *dir, const char *name, Buf *b)
{
    char path[512], chunk[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        abort();
    }
    size_t k;
    while ((k = fread(chunk, 1, sizeof(chunk), f)) > 0)
        buf_append(b, chunk, k);
    fclose(f);
}

/* The next framed record of [*p, end) into *rec and *n; false at the end. */
static inline int fz_next(const uint8_t **p, const uint8_t *end, const uint8_t **rec, size_t *n)
{
    if (*p >= end)
        return 0;
    size_t left = (size_t)(end - *p);
    if (left < 2) {
        *rec = *p;
        *n = left;
        *p = end;
        return 1;
    }
    size_t len = (size_t)(*p)[0] | (size_t)(*p)[1] << 8;
    *p += 2;
    left -= 2;
    if (len > left)
        len = left;
    *rec = *p;
    *n = len;
    *p += len;
    return 1;
}

/* Append one framed record (the inverse of fz_next; seeds). */
static inline void fz_frame(Buf *b, const void *p, size_t n)
{
    uint8_t h[2] = {(uint8_t)(n & 0xff), (uint8_t)(n >> 8)};
    buf_append(b, h, 2);
    buf_append(b, p, n);
}

#endif
