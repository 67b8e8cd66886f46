/*
 * fuzz/fuzz_mgrput.c - the pipeline manager's PUT body and persisted
 * pipeline file (manager/pipes.c): mpipe_from_json on whatever cJSON makes
 * of the bytes (both as a PUT body and as a reloaded DIR/NAME.json), then
 * the API's view of what it accepted (mpipe_to_json), and the name check
 * on the raw bytes as a path segment.
 *
 * Input: a JSON document. Seeds: fuzz/corpus/mgrput/.
 */
#include "fuzz.h"

#include <cJSON.h>

#include "base/mem.h"
#include "manager/mgr_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char name[MGR_NAME_MAX + 1];
    snprintf(name, sizeof(name), "%.*s", (int)(size < MGR_NAME_MAX ? size : MGR_NAME_MAX),
             (const char *)data);
    (void)mpipe_name_ok(name);
    cJSON *j = cJSON_ParseWithLength((const char *)data, size);
    for (int persisted = 0; persisted < 2; persisted++) {
        Pipe *p = sl_calloc(1, sizeof(*p));
        snprintf(p->name, sizeof(p->name), "p");
        Err e = {0};
        if (!mpipe_from_json(p, j, persisted, &e)) {
            cJSON *out = mpipe_to_json(p, true);
            char *text = cJSON_PrintUnformatted(out);
            free(text);
            cJSON_Delete(out);
        }
        mpipe_free(p);
    }
    cJSON_Delete(j);
    return 0;
}
