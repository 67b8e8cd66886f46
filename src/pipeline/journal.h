/*
 * pipeline/journal.h - the step journal and the HTTP ingress log
 * (journal.c): what a restart needs beyond the checkpoint.
 */
#ifndef SL_PIPELINE_JOURNAL_H
#define SL_PIPELINE_JOURNAL_H

#include "../io/connector.h"

/* A hash of a connector's rows (datagen ranges or parsed chunks), added
   to h: the same rows cut into other pieces hash the same. */
uint64_t ft_hash_pieces(const Piece *list, uint64_t h);

#endif
