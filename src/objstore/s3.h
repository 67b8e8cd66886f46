/*
 * objstore/s3.h - a minimal S3 client over libcurl (SigV4 signed by
 * libcurl, path-style URLs ENDPOINT/BUCKET/KEY, so any S3-compatible
 * server works). A leaf module (base only): storage/ mirrors storage
 * directories into a bucket with it, io/ reads objects for s3_input.
 * Each call uses its own curl handle, so calls may run on any thread.
 */
#ifndef SL_OBJSTORE_S3_H
#define SL_OBJSTORE_S3_H

#include "../base/buf.h"
#include "../base/err.h"

typedef struct S3 S3;

/* Where and as whom. NULL members: endpoint from AWS_ENDPOINT_URL (or
   SLUICE_S3_ENDPOINT), region from AWS_REGION (default us-east-1), key
   and secret from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY. prefix: ""
   or NULL for none; names given to the calls below follow it. */
typedef struct S3Config {
    const char *endpoint, *bucket, *prefix, *region, *key, *secret;
} S3Config;

/* SL_ECONFIG (naming `what`) when the endpoint or credentials are missing. */
int s3_new(const S3Config *cfg, const char *what, S3 **out, Err *err);
/* "s3://BUCKET/PREFIX", everything else from the environment (storage). */
int s3_open(const char *url, S3 **out, Err *err);
void s3_free(S3 *s);
const char *s3_describe(const S3 *s, char *b, size_t n);
int s3_ensure_bucket(S3 *s, Err *err);
int s3_put(S3 *s, const char *name, const void *data, size_t n, Err *err);
int s3_get(S3 *s, const char *name, Buf *out, Err *err);
/* Bytes [off, off + len) of the object (fewer at its end) into out.
   *status gets the HTTP status (0: no answer, a transport error). */
int s3_get_range(S3 *s, const char *name, int64_t off, int64_t len, Buf *out, long *status,
                 Err *err);
int s3_delete(S3 *s, const char *name, Err *err);
/* Names (without the prefix) of the objects directly under the prefix. */
int s3_list(S3 *s, char ***names, int *count, Err *err);

typedef struct S3Object {
    char *name; /* after the prefix (sl_free) */
    int64_t size;
} S3Object;
/* Every object whose key starts with the prefix (any depth), in key
   order, with sizes; free with s3_objects_free. */
int s3_list_all(S3 *s, S3Object **objs, int *count, Err *err);
void s3_objects_free(S3Object *objs, int count);

#endif
