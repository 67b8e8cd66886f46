/*
 * storage/batchfile.c - one Batch as one immutable, checksummed, compressed
 * file. In: batches from traces (store_put_batch). Out: the same batches
 * read back (store_get_batch), bit for bit.
 *
 * File layout (little-endian):
 *    0  magic "SLBATCH\0"
 *    8  u32 format version (STORE_FORMAT_VERSION), u32 flags (0; a block of
 *       a spilled run: STORE_FLAG_NO_HASH, and no content hash below, and
 *       STORE_FLAG_UNIFORM for a uniform batch, below)
 *   16  u64 tuples n
 *   24  u64 uncompressed payload size (20 n + data bytes)
 *   32  u64 tuple data bytes
 *   40  16 bytes XXH3-128 of n and the uncompressed payload (the name)
 *   56  u64 reserved (0)
 *   64  one zstd frame holding the payload (a block flagged STORE_FLAG_LZ4:
 *       one LZ4 block holding it)
 *  end  u64 XXH64 of everything before it
 * Payload: end offsets off[1..n] (u64), w[n] (i64), klen[n] (u32), data.
 * A spilled block of a uniform batch (zset/batch.h: every tuple tlen bytes,
 * every key fklen) has STORE_FLAG_UNIFORM, u32 tlen and u32 fklen at 56,
 * and its payload is w[n] and the data only (uncompressed size 8 n + data
 * bytes), read back into a uniform batch.
 * On a 64-bit little-endian host those are the batch's own arrays, so
 * hashing and compressing stream straight from the batch without a copy,
 * and a read decompresses in one call into the new batch block, where the
 * four arrays lie end to end in that order.
 *
 * The same bytes may also live under the twin name batch-<hash>-1.slb
 * (storage.h, store_set_avoid): a put takes the name the previous
 * checkpoint does not use, copying the file it has (checksum verified)
 * rather than compressing again; an existing file is reused only once its
 * checksum verifies, else it is written again.
 *
 * A batch read back is one sl_malloc block laid out as batch.c lays it out
 * (header, off, w, klen, data), so batch_unref and batch_bytes work on it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>
#include <lz4.h>
#include <zstd.h>

#include "../base/mem.h"
#include "store_int.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "storage/batchfile.c assumes a little-endian host"
#endif
_Static_assert(sizeof(size_t) == 8, "storage/batchfile.c assumes 64-bit size_t");

#define HDR_SIZE 64
#define ZSTD_LEVEL 1
static const char MAGIC[8] = "SLBATCH";

/* The payload as up to four regions of the batch. */
typedef struct Region {
    const void *p;
    size_t n;
} Region;

/* A uniform batch (zset/batch.h) has no offset and key length tables:
   they are built into *scratch (sl_free it), so the file is the same. */
static void batch_regions(const Batch *b, Region r[4], void **scratch)
{
    size_t nbytes = batch_off(b, b->n);
    size_t n = (size_t)b->n;
    const size_t *off1;
    const uint32_t *klen;
    batch_tables(b, &off1, &klen, scratch);
    r[0] = (Region){off1, n * sizeof(size_t)};
    r[1] = (Region){b->w, n * sizeof(int64_t)};
    r[2] = (Region){klen, n * sizeof(uint32_t)};
    r[3] = (Region){b->data, nbytes};
}


static XXH128_hash_t content_hash(const Batch *b)
{
    Region r[4];
    void *scratch;
    batch_regions(b, r, &scratch);
    XXH3_state_t *s = XXH3_createState();
    XXH3_128bits_reset(s);
    uint64_t n = (uint64_t)b->n;
    XXH3_128bits_update(s, &n, sizeof(n));
    for (int i = 0; i < 4; i++)
        if (r[i].n)
            XXH3_128bits_update(s, r[i].p, r[i].n);
    XXH128_hash_t h = XXH3_128bits_digest(s);
    XXH3_freeState(s);
    sl_free(scratch);
    return h;
}

static void hash_name(XXH128_hash_t h, char name[STORE_NAME_MAX])
{
    snprintf(name, STORE_NAME_MAX, "batch-%016llx%016llx.slb", (unsigned long long)h.high64,
             (unsigned long long)h.low64);
}

static void put_u32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void put_u64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }
static uint32_t get_u32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}
static uint64_t get_u64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static int corrupt(Store *st, const char *name, Err *err, const char *what);

/* ---- writing ---- */

/* Compress the payload of b into fd after the header; feeds every byte
   written into the checksum state. */
static int write_payload(Store *st, int fd, const Batch *b, XXH64_state_t *ck, const char *tmp,
                         Err *err)
{
    Region r[4];
    void *scratch;
    batch_regions(b, r, &scratch);
    ZSTD_CCtx *cx = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(cx, ZSTD_c_compressionLevel, ZSTD_LEVEL);
    ZSTD_CCtx_setParameter(cx, ZSTD_c_checksumFlag, 0);
    ZSTD_CCtx_setPledgedSrcSize(cx, r[0].n + r[1].n + r[2].n + r[3].n);
    size_t cap = ZSTD_CStreamOutSize();
    uint8_t *out = sl_malloc(cap);
    bool crash_checked = false; /* the crash point fires once data is on disk */
    int rc = 0;
    for (int i = 0; i < 5 && rc == 0; i++) {
        bool last = i == 4;
        ZSTD_inBuffer in = {last ? NULL : r[i].p, last ? 0 : r[i].n, 0};
        ZSTD_EndDirective mode = last ? ZSTD_e_end : ZSTD_e_continue;
        for (;;) {
            ZSTD_outBuffer ob = {out, cap, 0};
            size_t left = ZSTD_compressStream2(cx, &ob, &in, mode);
            if (ZSTD_isError(left)) {
                rc = err_set(err, SL_EIO, "storage %s/%s: zstd: %s", st->dir, tmp,
                             ZSTD_getErrorName(left));
                break;
            }
            if (ob.pos) {
                int e = store_write_all(fd, out, ob.pos);
                if (e) {
                    rc = err_set(err, SL_EIO, "storage %s/%s: write: %s", st->dir, tmp,
                                 strerror(-e));
                    break;
                }
                XXH64_update(ck, out, ob.pos);
                st->bytes_written += ob.pos;
                if (!crash_checked) {
                    crash_checked = true;
                    store_crash_point("batch-write");
                }
            }
            if (last ? left == 0 : in.pos == in.size)
                break;
        }
    }
    sl_free(out);
    ZSTD_freeCCtx(cx);
    sl_free(scratch);
    return rc;
}

/* Do bytes f[0..n) pass the checks that need no decompression (magic,
   version, size, the trailing checksum)? On failure why says what failed. */
static bool bytes_verify(const uint8_t *f, size_t n, char *why, size_t whyn)
{
    if (n < HDR_SIZE + 8) {
        snprintf(why, whyn, "truncated to %zu bytes (header and checksum need %d)", n,
                 HDR_SIZE + 8);
        return false;
    }
    if (memcmp(f, MAGIC, 8) != 0) {
        snprintf(why, whyn, "bad magic (not a Sluice batch file)");
        return false;
    }
    if (get_u32(f + 8) != STORE_FORMAT_VERSION) {
        snprintf(why, whyn, "format version %u; this build reads %d", get_u32(f + 8),
                 STORE_FORMAT_VERSION);
        return false;
    }
    uint64_t stored = get_u64(f + n - 8), computed = XXH64(f, n - 8, 0);
    if (stored != computed) {
        snprintf(why, whyn,
                 "checksum mismatch over %zu bytes (stored %016llx, computed %016llx): "
                 "truncated or damaged",
                 n, (unsigned long long)stored, (unsigned long long)computed);
        return false;
    }
    return true;
}

/* Is the file there and whole (bytes_verify)? */
static bool file_verifies(Store *st, const char *name)
{
    uint8_t *f;
    size_t n;
    Err e = {0};
    char why[200];
    if (store_read_file(st, name, &f, &n, &e))
        return false;
    bool ok = bytes_verify(f, n, why, sizeof(why));
    sl_free(f);
    return ok;
}

int store_reuse_batch(Store *st, const char *name, char name_out[STORE_NAME_MAX], Err *err)
{
    if (!store_is_batch_name(name))
        return err_set(err, SL_EIO, "storage %s: '%s' is not a batch file name", st->dir, name);
    if (store_avoided(st, name))
        store_batch_twin(name, name_out);
    else
        snprintf(name_out, STORE_NAME_MAX, "%s", name);
    if (strcmp(name_out, name) && store_file_exists(st, name_out) &&
        file_verifies(st, name_out)) {
        st->batches_reused++;
        return 0;
    }
    uint8_t *f;
    size_t n;
    char why[200];
    int rc = store_read_file(st, name, &f, &n, err);
    if (rc)
        return rc;
    if (!bytes_verify(f, n, why, sizeof(why))) {
        sl_free(f);
        return corrupt(st, name, err, why);
    }
    if (!strcmp(name_out, name)) { /* nothing to avoid: the file itself */
        sl_free(f);
        st->batches_reused++;
        return 0;
    }
    char tmp[96];
    int fd = store_tmp_open(st, name_out, tmp, err);
    if (fd < 0) {
        sl_free(f);
        return fd;
    }
    int e = store_write_all(fd, f, n), fe = e ? 0 : store_fault_due("batch-write");
    if (fe)
        e = -fe;
    sl_free(f);
    if (e) {
        store_tmp_discard(st, fd, tmp);
        return err_set(err, SL_EIO, "storage %s/%s: write: %s", st->dir, tmp, strerror(-e));
    }
    st->bytes_written += n;
    rc = store_publish(st, fd, tmp, name_out, err);
    if (rc == 0)
        st->batches_reused++;
    return rc;
}

int store_put_batch(Store *st, const Batch *b, char name_out[STORE_NAME_MAX], Err *err)
{
    XXH128_hash_t h = content_hash(b);
    hash_name(h, name_out);
    if (store_avoided(st, name_out)) {
        /* the previous checkpoint has this very file: this one takes the
           twin, copied (no compression) when it is missing */
        char prev[STORE_NAME_MAX];
        memcpy(prev, name_out, STORE_NAME_MAX);
        Err ce = {0};
        if (store_reuse_batch(st, prev, name_out, &ce) == 0)
            return 0;
        store_batch_twin(prev, name_out); /* the previous one is damaged: write it */
    }
    if (store_file_exists(st, name_out) && file_verifies(st, name_out)) {
        st->batches_reused++;
        return 0;
    } /* missing, or damaged: written (again) */
    size_t n = (size_t)b->n, nbytes = batch_off(b, b->n);
    uint8_t hdr[HDR_SIZE] = {0};
    memcpy(hdr, MAGIC, 8);
    put_u32(hdr + 8, STORE_FORMAT_VERSION);
    put_u32(hdr + 12, 0);
    put_u64(hdr + 16, n);
    put_u64(hdr + 24, n * 20 + nbytes);
    put_u64(hdr + 32, nbytes);
    XXH128_canonical_t canon;
    XXH128_canonicalFromHash(&canon, h);
    memcpy(hdr + 40, canon.digest, 16);

    char tmp[96];
    int fd = store_tmp_open(st, name_out, tmp, err);
    if (fd < 0)
        return fd;
    XXH64_state_t *ck = XXH64_createState();
    XXH64_reset(ck, 0);
    int rc = 0, e = store_write_all(fd, hdr, HDR_SIZE);
    int fe = e ? 0 : store_fault_due("batch-write");
    if (fe)
        e = -fe;
    if (e)
        rc = err_set(err, SL_EIO, "storage %s/%s: write: %s", st->dir, tmp, strerror(-e));
    XXH64_update(ck, hdr, HDR_SIZE);
    st->bytes_written += HDR_SIZE;
    if (rc == 0)
        rc = write_payload(st, fd, b, ck, tmp, err);
    if (rc == 0) {
        uint8_t tail[8];
        put_u64(tail, XXH64_digest(ck));
        e = store_write_all(fd, tail, 8);
        if (e)
            rc = err_set(err, SL_EIO, "storage %s/%s: write: %s", st->dir, tmp, strerror(-e));
        st->bytes_written += 8;
    }
    XXH64_freeState(ck);
    if (rc) {
        store_tmp_discard(st, fd, tmp);
        return rc;
    }
    store_crash_point("batch-rename");
    rc = store_publish(st, fd, tmp, name_out, err);
    if (rc == 0)
        st->batches_written++;
    return rc;
}

/* ---- reading ---- */

static int corrupt(Store *st, const char *name, Err *err, const char *what)
{
    return err_set(err, SL_EIO, "storage file %s/%s is corrupt: %s", st->dir, name, what);
}

/* The same for the file (or block) `where` ("dir/name"). */
static int corrupt_at(const char *where, Err *err, const char *what)
{
    return err_set(err, SL_EIO, "storage file %s is corrupt: %s", where, what);
}

/* Decompress the payload src[0..sn) (a zstd frame, or an LZ4 block when
   lz4) to dst: exactly raw bytes. dx: a zstd context to use (NULL: a
   fresh one). */
static int decompress(const char *where, const uint8_t *src, size_t sn, void *dst, size_t raw,
                      ZSTD_DCtx *dx, bool lz4, Err *err)
{
    if (lz4) {
        if (sn > (size_t)LZ4_MAX_INPUT_SIZE || raw > (size_t)INT32_MAX)
            return corrupt_at(where, err, "sizes in the header disagree");
        int got = LZ4_decompress_safe((const char *)src, dst, (int)sn, (int)raw);
        if (got < 0)
            return corrupt_at(where, err, "lz4: malformed block");
        if ((size_t)got != raw)
            return corrupt_at(where, err, "payload shorter than its header says");
        return 0;
    }
    unsigned long long fsize = ZSTD_getFrameContentSize(src, sn);
    if (fsize != raw)
        return corrupt_at(where, err, "payload size disagrees with the header");
    ZSTD_DCtx *own = dx ? NULL : ZSTD_createDCtx();
    size_t got = ZSTD_decompressDCtx(dx ? dx : own, dst, raw, src, sn);
    ZSTD_freeDCtx(own);
    if (ZSTD_isError(got)) {
        char msg[160];
        snprintf(msg, sizeof(msg), "zstd: %s", ZSTD_getErrorName(got));
        return corrupt_at(where, err, msg);
    }
    if (got != raw)
        return corrupt_at(where, err, "payload shorter than its header says");
    return 0;
}

/* Decompress the payload src[0..sn) into b's block after off[0]: exactly
   raw bytes (off[1..n], w, klen and data lie end to end there). */
static int read_payload(const char *where, const uint8_t *src, size_t sn, Batch *b, size_t raw,
                        ZSTD_DCtx *dx, bool lz4, Err *err)
{
    return decompress(where, src, sn, b->off + 1, raw, dx, lz4, err);
}

/* Offsets rise, keys fit their tuples, weights are non-zero. */
static int check_shape(const char *where, const Batch *b, Err *err)
{
    for (int64_t i = 0; i < b->n; i++) {
        if (b->off[i + 1] < b->off[i] || b->klen[i] > b->off[i + 1] - b->off[i] || b->w[i] == 0)
            return corrupt_at(where, err, "tuple table inconsistent");
    }
    return 0;
}

/* A block in the uniform layout (STORE_FLAG_UNIFORM; header as decode
   read it): the payload is w[n] then the data, n tuples of tlen bytes
   with keys of fklen (u32 tlen, u32 fklen at 56). */
static int decode_uniform(const char *where, const uint8_t *f, size_t fn, uint64_t n,
                          uint64_t raw, uint64_t nbytes, ZSTD_DCtx *dx, bool lz4, Batch **out,
                          Err *err)
{
    uint32_t tlen = get_u32(f + 56), fklen = get_u32(f + 60);
    if (n > (1ull << 40) || tlen == 0 || fklen > tlen || nbytes != n * tlen ||
        raw != n * 8 + nbytes)
        return corrupt_at(where, err, "sizes in the header disagree");
    Batch *b = sl_malloc(sizeof(Batch) + raw);
    b->refs = 1;
    b->big = false;
    b->n = (int64_t)n;
    b->tlen = tlen;
    b->fklen = fklen;
    /* The uniform layout of batch.c (batch_layout): w, then the data. */
    b->off = NULL;
    b->klen = NULL;
    b->w = (int64_t *)(b + 1);
    b->data = (uint8_t *)(b->w + n);
    int rc = decompress(where, f + HDR_SIZE, fn - HDR_SIZE - 8, b->w, raw, dx, lz4, err);
    for (uint64_t i = 0; !rc && i < n; i++)
        if (b->w[i] == 0)
            rc = corrupt_at(where, err, "tuple table inconsistent");
    if (rc) {
        sl_free(b);
        return rc;
    }
    *out = b;
    return 0;
}

/* The batch in the image f[0..fn) of a batch file (`where` names it in
   errors). name: the file name whose content hash the header must match
   (NULL: an image with no content hash, STORE_FLAG_NO_HASH). */
static int decode(const char *where, const char *name, const uint8_t *f, size_t fn,
                  ZSTD_DCtx *dx, Batch **out, Err *err)
{
    *out = NULL;
    char msg[200];
    if (fn < HDR_SIZE + 8) {
        snprintf(msg, sizeof(msg), "truncated to %zu bytes (header and checksum need %d)", fn,
                 HDR_SIZE + 8);
        return corrupt_at(where, err, msg);
    }
    if (memcmp(f, MAGIC, 8) != 0)
        return corrupt_at(where, err, "bad magic (not a Sluice batch file)");
    uint32_t version = get_u32(f + 8);
    if (version != STORE_FORMAT_VERSION)
        return err_set(err, SL_EIO, "storage file %s has format version %u; this build reads %d",
                       where, version, STORE_FORMAT_VERSION);
    uint64_t stored = get_u64(f + fn - 8), computed = XXH64(f, fn - 8, 0);
    if (stored != computed) {
        snprintf(msg, sizeof(msg),
                 "checksum mismatch over %zu bytes (stored %016llx, computed %016llx): "
                 "truncated or damaged",
                 fn, (unsigned long long)stored, (unsigned long long)computed);
        return corrupt_at(where, err, msg);
    }
    uint32_t flags = get_u32(f + 12);
    if ((flags & STORE_FLAG_NO_HASH) != (name ? 0 : STORE_FLAG_NO_HASH) ||
        (flags & ~(STORE_FLAG_NO_HASH | STORE_FLAG_UNIFORM | STORE_FLAG_LZ4)) ||
        ((flags & (STORE_FLAG_UNIFORM | STORE_FLAG_LZ4)) && name))
        return corrupt_at(where, err, "flags disagree with the kind of file");
    uint64_t n = get_u64(f + 16), raw = get_u64(f + 24), nbytes = get_u64(f + 32);
    if (flags & STORE_FLAG_UNIFORM)
        return decode_uniform(where, f, fn, n, raw, nbytes, dx, flags & STORE_FLAG_LZ4, out, err);
    if (n > (1ull << 40) || nbytes > (1ull << 50) || raw != n * 20 + nbytes)
        return corrupt_at(where, err, "sizes in the header disagree");
    size_t block = sizeof(Batch) + (n + 1) * sizeof(size_t) + n * sizeof(int64_t) +
                   n * sizeof(uint32_t) + nbytes;
    Batch *b = sl_malloc(block);
    b->refs = 1;
    b->tlen = b->fklen = 0;
    b->big = false;
    b->n = (int64_t)n;
    /* The layout of batch.c; read_payload relies on the order. */
    b->off = (size_t *)(b + 1);
    b->w = (int64_t *)(b->off + n + 1);
    b->klen = (uint32_t *)(b->w + n);
    b->data = (uint8_t *)(b->klen + n);
    b->off[0] = 0;
    int rc = read_payload(where, f + HDR_SIZE, fn - HDR_SIZE - 8, b, raw, dx,
                          flags & STORE_FLAG_LZ4, err);
    if (rc == 0 && b->off[n] != nbytes)
        rc = corrupt_at(where, err, "tuple offsets disagree with the data size");
    if (rc == 0)
        rc = check_shape(where, b, err);
    if (rc == 0 && name) {
        char expect[STORE_NAME_MAX];
        XXH128_canonical_t canon;
        memcpy(canon.digest, f + 40, 16);
        XXH128_hash_t h = content_hash(b);
        hash_name(h, expect); /* the twin name (-1) holds the same bytes */
        if (!XXH128_isEqual(h, XXH128_hashFromCanonical(&canon)) || strncmp(expect, name, 38))
            rc = corrupt_at(where, err, "contents do not match the file's name");
    }
    if (rc) {
        sl_free(b);
        return rc;
    }
    *out = batch_compact(b); /* the layout a batch built in memory would have */
    return 0;
}

int store_get_batch(Store *st, const char *name, Batch **out, Err *err)
{
    *out = NULL;
    if (!store_is_batch_name(name))
        return err_set(err, SL_EIO, "storage %s: '%s' is not a batch file name", st->dir, name);
    uint8_t *f;
    size_t fn;
    int rc = store_read_file(st, name, &f, &fn, err);
    if (rc)
        return rc;
    size_t wn = strlen(st->dir) + strlen(name) + 2;
    char *where = sl_malloc(wn);
    snprintf(where, wn, "%s/%s", st->dir, name);
    rc = decode(where, name, f, fn, NULL, out, err);
    sl_free(where);
    sl_free(f);
    return rc;
}

/* ---- a batch as the bytes of a block (spilled runs) ---- */

/* The regions r[0..4) as one LZ4 block after the header of f (cap bytes
   in all); its size to *fn (header included). */
static int encode_lz4(const Region *r, size_t raw, uint8_t *f, size_t cap, size_t *fn, Err *err)
{
    if (raw > (size_t)LZ4_MAX_INPUT_SIZE)
        return err_set(err, SL_EIO, "spilled block: %zu bytes, beyond what an LZ4 block holds",
                       raw);
    const char *src = r[0].p;
    char *flat = NULL;
    bool joined = true; /* (a batch built by batch.c lays its arrays end to end) */
    for (int i = 1; i < 4; i++)
        joined = joined && (!r[i].n || (const char *)r[i - 1].p + r[i - 1].n == r[i].p);
    if (!joined) { /* one contiguous input */
        flat = sl_malloc(raw ? raw : 1);
        size_t at = 0;
        for (int i = 0; i < 4; i++) {
            if (r[i].n)
                memcpy(flat + at, r[i].p, r[i].n);
            at += r[i].n;
        }
        src = flat;
    }
    int got = LZ4_compress_default(src, (char *)f + HDR_SIZE, (int)raw, (int)(cap - HDR_SIZE - 8));
    sl_free(flat);
    if (got <= 0 && raw)
        return err_set(err, SL_EIO, "spilled block: lz4 output beyond its bound");
    *fn = HDR_SIZE + (size_t)got;
    return 0;
}

int store_encode_batch(const Batch *b, StoreCodec *c, uint8_t **out, size_t *outn, Err *err)
{
    if (!c->cx && !c->lz4) {
        c->cx = ZSTD_createCCtx();
        ZSTD_CCtx_setParameter(c->cx, ZSTD_c_compressionLevel, c->level ? c->level : ZSTD_LEVEL);
        ZSTD_CCtx_setParameter(c->cx, ZSTD_c_checksumFlag, 0);
    }
    if (!c->lz4)
        ZSTD_CCtx_reset(c->cx, ZSTD_reset_session_only);
    size_t n = (size_t)b->n, nbytes = batch_off(b, b->n), raw = n * 20 + nbytes;
    Region r[4];
    void *scratch = NULL;
    bool uni = !b->off && n > 0; /* w and the data alone */
    if (uni) {
        raw = n * 8 + nbytes;
        r[0] = (Region){b->w, n * sizeof(int64_t)};
        r[1] = (Region){b->data, nbytes};
        r[2] = r[3] = (Region){NULL, 0};
    } else {
        batch_regions(b, r, &scratch);
    }
    size_t cap = c->lz4 ? HDR_SIZE + (size_t)LZ4_compressBound(raw <= LZ4_MAX_INPUT_SIZE
                                                                     ? (int)raw : 0) + 8
                        : HDR_SIZE + ZSTD_compressBound(raw) + raw / 64 + 4096 + 8; /* (margin: streamed) */
    uint8_t *f = sl_malloc(cap);
    memset(f, 0, HDR_SIZE);
    memcpy(f, MAGIC, 8);
    put_u32(f + 8, STORE_FORMAT_VERSION);
    put_u32(f + 12, STORE_FLAG_NO_HASH | (uni ? STORE_FLAG_UNIFORM : 0) |
                        (c->lz4 ? STORE_FLAG_LZ4 : 0));
    put_u64(f + 16, n);
    put_u64(f + 24, raw);
    put_u64(f + 32, nbytes);
    if (uni) {
        put_u32(f + 56, b->tlen);
        put_u32(f + 60, b->fklen);
    }
    if (c->lz4) {
        size_t fn = 0;
        int rc = encode_lz4(r, raw, f, cap, &fn, err);
        sl_free(scratch);
        if (rc) {
            sl_free(f);
            return rc;
        }
        put_u64(f + fn, XXH64(f, fn, 0));
        *out = f;
        *outn = fn + 8;
        return 0;
    }
    ZSTD_CCtx_setPledgedSrcSize(c->cx, raw);
    ZSTD_outBuffer ob = {f + HDR_SIZE, cap - HDR_SIZE - 8, 0};
    int rc = 0;
    for (int i = 0; i < 5 && rc == 0; i++) {
        bool last = i == 4;
        ZSTD_inBuffer in = {last ? NULL : r[i].p, last ? 0 : r[i].n, 0};
        for (;;) { /* the output holds the bound: each call consumes all */
            size_t left = ZSTD_compressStream2(c->cx, &ob, &in, last ? ZSTD_e_end : ZSTD_e_continue);
            if (ZSTD_isError(left)) {
                rc = err_set(err, SL_EIO, "spilled block: zstd: %s", ZSTD_getErrorName(left));
                break;
            }
            if (last ? left == 0 : in.pos == in.size)
                break;
            if (ob.pos == ob.size) {
                rc = err_set(err, SL_EIO, "spilled block: zstd output beyond its bound");
                break;
            }
        }
    }
    sl_free(scratch);
    if (rc) {
        sl_free(f);
        return rc;
    }
    size_t fn = HDR_SIZE + ob.pos;
    put_u64(f + fn, XXH64(f, fn, 0));
    *out = f;
    *outn = fn + 8;
    return 0;
}

int store_decode_batch(const char *where, const uint8_t *f, size_t fn, StoreCodec *c,
                       Batch **out, Err *err)
{
    if (!c->dx)
        c->dx = ZSTD_createDCtx();
    return decode(where, NULL, f, fn, c->dx, out, err);
}

void store_codec_free(StoreCodec *c)
{
    ZSTD_freeCCtx(c->cx);
    ZSTD_freeDCtx(c->dx);
    c->cx = NULL;
    c->dx = NULL;
}
