/*
 * base/budget.h - the bounds of one computation on one thread (an HTTP
 * /query): live bytes allocated through sl_malloc, a deadline, and a
 * cancel test (the client went away). The engine's loops ask
 * budget_stop() at cheap points (per morsel, every few thousand join
 * output rows) and wind down with an error when it says so: cooperative,
 * never a thread kill or a longjmp.
 *
 * In: budget_begin/budget_end by the one who runs the computation (on the
 * thread that runs it; other threads are not bounded); byte counts from
 * mem.c's allocation functions. Out: budget_stop() and, once it is true,
 * a message naming the bound that was passed (budget_error).
 */
#ifndef SL_BASE_BUDGET_H
#define SL_BASE_BUDGET_H

#include "err.h"

typedef enum BudgetStop {
    BUDGET_RUNNING = 0,
    BUDGET_MEMORY,    /* more than limit bytes live */
    BUDGET_TIMEOUT,   /* past the deadline */
    BUDGET_CANCELLED, /* cancelled() said so */
} BudgetStop;

typedef struct Budget {
    /* set by the caller before budget_begin */
    int64_t limit;          /* live bytes allowed; 0 = no bound */
    double timeout;         /* seconds from budget_begin; 0 = none */
    bool (*cancelled)(void *arg); /* polled at most every 50 ms; may be NULL */
    void *arg;
    /* kept by budget.c */
    int64_t used;           /* bytes allocated minus bytes freed on this
                               thread since budget_begin (memory from before
                               it, freed now, makes it smaller) */
    int64_t peak;
    int64_t deadline_ns, next_poll_ns; /* CLOCK_MONOTONIC */
    BudgetStop stop;
} Budget;

/* Bound the calling thread by b (borrowed until budget_end). */
void budget_begin(Budget *b);
/* Lift the calling thread's bound. */
void budget_end(void);

extern __thread Budget *budget__cur;
bool budget__check(Budget *b);

/* Should the computation on this thread wind down? False, at the cost of
   one thread-local load, when no budget is set. */
static inline bool budget_stop(void)
{
    Budget *b = budget__cur;
    return b && budget__check(b);
}

/* Once budget_stop() said so: sets err (SL_ERUNTIME) to a message naming
   the bound that was passed; returns SL_ERUNTIME. */
int budget_error(Err *err);

/* mem.c: n bytes (negative: freed) allocated on a bounded thread. */
static inline void budget__count(int64_t n)
{
    Budget *b = budget__cur;
    b->used += n;
    if (b->used > b->peak)
        b->peak = b->used;
}

#endif
