/*
 * fuzz/fuzz_journal.c - step journal records (pipeline/journal.c
 * on_journal) and the record log framing under them (storage/log.c
 * log_scan: magic, length, checksum, torn tails), read back the way a
 * restart reads them: pipeline_new with --storage over a directory that
 * holds one journal segment (fuzz_ft.h).
 *
 * Input (fz_ft_write_log): byte 0 bit 0 clear: the rest is records
 * framed as in fuzz.h, each appended with log_append (so they pass the
 * checksum and reach the decoder); set: the rest is the segment file's
 * bytes as they are. Seeds:
 * fuzz/corpus/journal/, cut from a real run's journal.
 */
#include "fuzz_ft.h"

static const char *dir;

int LLVMFuzzerInitialize(int *argc, char ***argv) { return fz_ft_log_init("journal-"); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fz_ft_log_run(&dir, "journal", "journal-0-1.log", data, size);
}
