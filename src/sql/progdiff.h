/*
 * sql/progdiff.h - the difference between two compiled programs, relation
 * by relation and node by node: what a pipeline restarted with the new
 * program can keep, what it must recompute from stored state, what it
 * must read again from a source, and what it drops (issue 17; the rules
 * and examples: docs/bootstrapping.md).
 *
 * Both circuits come from circuit_compile (the CLI compiles the program
 * stored in a checkpoint and the new file the same way `run` does).
 * Nothing compares SQL text: every node gets a canonical fingerprint of
 * what it computes (its kind, its fields, its expressions, its column
 * types) and of its inputs' fingerprints, so equal fingerprints mean the
 * same stream over the same history, and a view over a changed view is
 * changed too. Labels, node numbers and the text's layout do not count.
 *
 * The result is the data structure bootstrapping needs, not just a
 * printout: per new node the old node whose state it takes over (or -1)
 * and whether its full contents can be rebuilt from stored state; per
 * relation its status, what changed and the consequence.
 */
#ifndef SL_SQL_PROGDIFF_H
#define SL_SQL_PROGDIFF_H

#include "../base/buf.h"
#include "../circuit/circuit.h"

typedef enum PdStatus { PD_UNCHANGED, PD_ADDED, PD_REMOVED, PD_CHANGED } PdStatus;

/* What changed in a relation present in both programs (bits). */
enum {
    PD_DEFINITION = 1,   /* its own query (a view) or PRIMARY KEY (a table) */
    PD_INPUTS = 2,       /* a relation it reads changed (PdRel.inputs names them) */
    PD_SCHEMA = 4,       /* column names or types */
    PD_CONNECTORS = 8,   /* the 'connectors' property */
    PD_MATERIALIZED = 16, /* the 'materialized' property */
    PD_FUNCTIONS = 32,   /* a SQL function it calls changed or went away
                            (PdRel.funcs names them) */
    PD_RETAIN = 64       /* a table's 'retain_input' property */
};

/* The consequence for a relation's contents on restart. */
typedef enum PdAction {
    PD_KEEP,      /* its state is kept, nothing is computed again */
    PD_RECOMPUTE, /* computed from stored state (no source is read again) */
    PD_REREAD,    /* needs history nobody stores: PdRel.reread are read again
                     from their connectors, feeding only the new part */
    PD_DROP,      /* removed: its state is released */
} PdAction;

typedef struct PdRel {
    const char *name;    /* as the program that has it spells it */
    bool is_table;
    PdStatus status;
    int what;            /* PD_DEFINITION | ... (PD_CHANGED only) */
    PdAction action;
    int old_rel, new_rel; /* indexes in each circuit, -1 when absent */
    bool stored;          /* its contents can be rebuilt from stored state */
    bool materialized;    /* a view materialized in the new program: a kept one
                             gives its new or changed output connectors a
                             snapshot of its contents first (else they start
                             with its next changes) */
    bool no_source;       /* a table without connectors (HTTP input only) */
    bool retain;          /* a table WITH ('retain_input' = 'true'): its contents
                             are stored, so new views over it need no re-read */
    const char *unreadable; /* a table whose history cannot be read again from its
                             connectors (progdiff_unreadable), or NULL: when it is
                             kept and a new view needs its history, bootstrapping
                             refuses */
    const char **inputs;  /* PD_INPUTS: the changed relations it reads */
    int ninputs;
    const char **funcs;   /* PD_FUNCTIONS: the changed functions it calls */
    int nfuncs;
    const char **reread;  /* PD_REREAD: the tables read again for it */
    int nreread;
    const char **reread_for; /* a kept table: the new views it is read again for */
    int nreread_for;
} PdRel;

typedef struct ProgDiff {
    Arena *arena;
    PdRel *rels;   /* the new program's relations in order, then the removed ones */
    int nrels;
    int counts[4]; /* relations per PdStatus */
    /* per node of the new circuit */
    int nnew;
    uint64_t *fp;  /* its fingerprint */
    int *old_node; /* the old node computing the same stream, or -1 */
    bool *stored;  /* its contents can be rebuilt from the old state alone */
    /* per node of the old circuit */
    int nold;
    bool *dropped; /* no new node computes its stream: its state is released */
} ProgDiff;

/* Compare old with new (both stay the caller's; the result copies what
   it names, so it outlives them). The texts they were compiled from (may
   be NULL) only tell a view's own edit (PD_DEFINITION) from a change of
   what it reads that recompiles it (an added column upstream: PD_INPUTS).
   Never fails; free with progdiff_free. */
ProgDiff *progdiff_new(const Circuit *old, const char *old_text, const Circuit *new_c,
                       const char *new_text);
void progdiff_free(ProgDiff *d);
/* Anything other than PD_UNCHANGED? */
bool progdiff_changed(const ProgDiff *d);
/* The table of `sluice diff` (one line per relation, then a count);
   relations named `hide` (may be NULL) are left out when unchanged. */
void progdiff_print(const ProgDiff *d, const char *hide, Buf *out);
/* The same as a JSON object (docs/bootstrapping.md gives its fields;
   cJSON_Delete it). */
cJSON *progdiff_json(const ProgDiff *d, const char *hide);
/* Are two 'connectors' JSON values the same (key order and layout do not
   count)? */
bool progdiff_same_json(const cJSON *a, const cJSON *b);
/* A node's fingerprint in circuit c (tests). */
uint64_t progdiff_node_fp(const Circuit *c, int node);

const char *progdiff_status_name(PdStatus s);
/* Why table r's history cannot be read again from its connectors for a
   bootstrap (docs/bootstrapping.md: datagen, file_input, s3_input,
   postgres_cdc_input and kafka_input from "earliest" or explicit offsets
   can), or NULL when it can. */
const char *progdiff_unreadable(const Relation *r);
const char *progdiff_action_name(PdAction a);

#endif
