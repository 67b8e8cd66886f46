/*
 * fuzz/fuzz_manifest.c - checkpoint manifests: the store's verifier and
 * loader (storage/store.c: checksum line, JSON, the "files" it names) and
 * the checkpoint decoder behind it (pipeline/ckpt.c ft_open: identity,
 * workers, the "state" entries and the batch files they name, input
 * positions, output offsets, the ingress watermark), read back the way a
 * restart reads them: pipeline_new with --storage (fuzz_ft.h) over a
 * directory holding the template run's batch files and one manifest.
 *
 * Input: byte 0 bit 0 clear: the rest is the manifest's JSON, written
 * with store_write_manifest (a valid checksum line, so malformed fields
 * reach ckpt.c) when the store accepts it; set, or refused: the rest is
 * the manifest file's bytes as they are. Byte 0 bits 1-3 choose its step.
 * Seeds: fuzz/corpus/manifest/, the template run's manifests.
 *
 * Byte mutations seldom keep a 2 KB JSON text valid, so half the time a
 * custom mutator edits the parsed manifest instead: it removes one member
 * or element, or gives it a value of another type or an extreme number,
 * which is how a manifest whose checksum verifies can still be malformed.
 */
#include <cjson/cJSON.h>

#include "fuzz_ft.h"

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);

/* Every (parent, item) pair under root, in document order. */
static void collect(cJSON *parent, cJSON ***items, cJSON ***parents, int *n, int *cap)
{
    for (cJSON *c = parent->child; c; c = c->next) {
        if (*n == *cap) {
            *cap = *cap ? *cap * 2 : 64;
            *items = realloc(*items, sizeof(cJSON *) * (size_t)*cap);
            *parents = realloc(*parents, sizeof(cJSON *) * (size_t)*cap);
        }
        (*items)[*n] = c;
        (*parents)[*n] = parent;
        (*n)++;
        collect(c, items, parents, n, cap);
    }
}

static cJSON *odd_value(unsigned r)
{
    static const double nums[] = {-1, 0, 1, 3, 2147483648.0, -9.3e18, 1e300, 0.5};
    switch (r % 6) {
    case 0: return cJSON_CreateNull();
    case 1: return cJSON_CreateString("x");
    case 2: return cJSON_CreateArray();
    case 3: return cJSON_CreateObject();
    case 4: return cJSON_CreateTrue();
    default: return cJSON_CreateNumber(nums[(r / 6) % ARRAY_LEN(nums)]);
    }
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
    if (size < 2 || (data[0] & 1) || seed % 2 == 0)
        return LLVMFuzzerMutate(data, size, max_size);
    char *text = malloc(size);
    memcpy(text, data + 1, size - 1);
    text[size - 1] = 0;
    cJSON *j = cJSON_Parse(text);
    free(text);
    if (!j)
        return LLVMFuzzerMutate(data, size, max_size);
    cJSON **items = NULL, **parents = NULL;
    int n = 0, cap = 0;
    collect(j, &items, &parents, &n, &cap);
    unsigned r = seed / 2;
    if (n > 0) {
        int k = (int)(r % (unsigned)n);
        r /= (unsigned)n;
        if (r % 3 == 0)
            cJSON_Delete(cJSON_DetachItemViaPointer(parents[k], items[k]));
        else
            cJSON_ReplaceItemViaPointer(parents[k], items[k], odd_value(r / 3));
    }
    free(items);
    free(parents);
    char *out = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    size_t len = out ? strlen(out) : 0;
    if (!out || len + 1 > max_size) {
        free(out);
        return LLVMFuzzerMutate(data, size, max_size);
    }
    memcpy(data + 1, out, len);
    free(out);
    return len + 1;
}

static void seeds(void)
{
    Store *st;
    Err e;
    err_init(&e);
    char **names;
    int n;
    if (store_open(ft_tpl, &st, &e) || store_list(st, "manifest-", &names, &n, &e))
        abort();
    for (int i = 0; i < n; i++) {
        Buf b = BUF_INIT, json = BUF_INIT;
        fz_read(ft_tpl, names[i], &json);
        buf_putc(&b, 1);
        buf_append(&b, json.p, json.n);
        char name[300];
        snprintf(name, sizeof(name), "raw-%d", i);
        fz_seed_write(name, &b);
        /* the JSON alone: the text before the checksum line */
        const char *t = buf_cstr(&json);
        const char *tail = strstr(t, "\n#");
        buf_reset(&b);
        buf_putc(&b, 2);
        buf_append(&b, t, tail ? (size_t)(tail - t) : json.n);
        snprintf(name, sizeof(name), "json-%d", i);
        fz_seed_write(name, &b);
        buf_free(&b);
        buf_free(&json);
    }
    store_list_free(names, n);
    store_close(st);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fz_ft_init();
    if (fz_seed_dir()) {
        seeds();
        fz_remove_dirs();
        _exit(0);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *dir;
    if (!dir)
        dir = fz_dir("manifest");
    if (size < 1)
        return 0;
    fz_clear(dir);
    fz_ft_link_batches(dir);
    uint64_t step = 1 + ((data[0] >> 1) & 7);
    bool written = false;
    if (!(data[0] & 1)) {
        char *json = sl_malloc(size);
        memcpy(json, data + 1, size - 1);
        json[size - 1] = 0;
        Store *st;
        Err e;
        err_init(&e);
        if (store_open(dir, &st, &e))
            abort();
        written = !store_write_manifest(st, step, json, &e);
        store_close(st);
        sl_free(json);
    }
    if (!written) {
        char name[64];
        snprintf(name, sizeof(name), "manifest-%llu.json", (unsigned long long)step);
        fz_write(dir, name, data + 1, size - 1);
    }
    fz_ft_open(dir);
    return 0;
}
