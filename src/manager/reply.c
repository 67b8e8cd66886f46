/*
 * manager/reply.c - the manager's own answers: a JSON body, or an error in
 * the pipeline API's shape {"error", "error_code", "details"} (api.c for
 * the REST routes, proxy.c when the pipeline's process does not answer).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mgr_int.h"

int api_json(struct MHD_Connection *c, unsigned status, cJSON *j)
{
    char *text = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    size_t n = strlen(text);
    char *body = realloc(text, n + 2);
    if (!body)
        abort();
    body[n] = '\n';
    struct MHD_Response *r = MHD_create_response_from_buffer(n + 1, body, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(r, "Content-Type", "application/json");
    if (status == MHD_HTTP_SERVICE_UNAVAILABLE)
        MHD_add_response_header(r, "Retry-After", "1");
    int rc = MHD_queue_response(c, status, r) == MHD_YES ? 0 : -1;
    MHD_destroy_response(r);
    return rc;
}

int api_error(struct MHD_Connection *c, unsigned status, const char *code, cJSON *details,
              const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "error", msg);
    cJSON_AddStringToObject(j, "error_code", code);
    cJSON_AddItemToObject(j, "details", details ? details : cJSON_CreateObject());
    return api_json(c, status, j);
}
