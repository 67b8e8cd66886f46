/*
 * base/forkgate.h - fork() for a process whose other threads keep
 * allocating (forkgate.c): a checkpoint's child (pipeline/snapshot.c)
 * holds a copy-on-write image of the state and allocates while it saves
 * it, so no other thread may be inside the allocator at the fork, or the
 * child inherits that thread's allocator lock held for ever and its next
 * allocation that needs it never returns.
 */
#ifndef SL_BASE_FORKGATE_H
#define SL_BASE_FORKGATE_H

#include <sys/types.h>

/* fork(), once no thread is inside an allocation (in builds whose
   allocator does not see to that itself: see forkgate.c). Allocations
   that start meanwhile wait until the fork is done. */
pid_t sl_fork(void);

/* The gate the allocation entry points pass (forkgate.c): between enter
   and leave the calling thread counts as allocating; sl_fork waits until
   no thread does. For tests, which use them to stand for an allocation
   that is in progress. */
void forkgate_enter(void);
void forkgate_leave(void);

/* Tests: called (on the forking thread) when sl_fork finds an
   allocation in progress, before it waits for it to end. */
extern void (*forkgate_on_wait)(void);

#endif
