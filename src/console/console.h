/*
 * console/console.h - the web console's files (docs/manager.md, "The web
 * console"), built into the binary: src/console/index.html, console.js,
 * graph.js and console.css are turned into byte arrays at build time
 * (scripts/embed_assets.sh -> build/gen/console_assets.h) and served by
 * the manager (`sluice serve`) and by a pipeline's own server (`sluice run
 * --http`) from this table. Nothing is fetched from the network at run
 * time. The files hold no data: everything the page shows comes from the
 * API it calls with the user's key, so they are served without one.
 */
#ifndef SL_CONSOLE_CONSOLE_H
#define SL_CONSOLE_CONSOLE_H

#include <stddef.h>

typedef struct ConsoleAsset {
    const char *path;          /* "/" (the page) or "/console/NAME" */
    const char *ctype;         /* its Content-Type */
    const unsigned char *data; /* its bytes (static; NUL after the last) */
    size_t len;
} ConsoleAsset;

/* The file served at path (exactly "/" or "/console/NAME"; a query string
   is not part of path), or NULL. */
const ConsoleAsset *console_asset(const char *path);

/* A libmicrohttpd response for a (its bytes are not copied), with the
   headers every console file gets: its Content-Type, a Content-Security-
   Policy that allows only this origin's scripts, styles and requests and
   no framing, and nosniff. The caller queues and destroys it. */
struct MHD_Response;
struct MHD_Response *console_response(const ConsoleAsset *a);

#endif
