/*
 * console/console.c - looks up the web console's files in the table that
 * scripts/embed_assets.sh generates from this folder's html, js and css at
 * build time (build/gen/console_assets.h, included through -Ibuild/gen).
 * Served by manager/api.c and server/http.c as they are: the bytes never
 * change while the process runs.
 */
#include <microhttpd.h>
#include <string.h>

#include "console.h"
#include "console_assets.h"

const ConsoleAsset *console_asset(const char *path)
{
    for (size_t i = 0; i < sizeof(assets) / sizeof(assets[0]); i++)
        if (!strcmp(path, assets[i].path))
            return &assets[i];
    return NULL;
}

struct MHD_Response *console_response(const ConsoleAsset *a)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(a->len, (void *)a->data, MHD_RESPMEM_PERSISTENT);
    if (!r)
        return NULL;
    MHD_add_response_header(r, "Content-Type", a->ctype);
    MHD_add_response_header(r, "Content-Security-Policy",
                            "default-src 'self'; frame-ancestors 'none'");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, "Cache-Control", "no-cache");
    return r;
}
