/*
 * pipeline/pipeline.c - the controller. Each iteration: ask every input
 * connector for rows (at most step_rows in all), hand them to the workers
 * as per-worker pieces, run one step, deliver each view's consolidated
 * changes to its output connectors, report progress. With until_done it
 * stops after the step in which the last input ended; otherwise it idles
 * once inputs end until SIGINT/SIGTERM. Then the summary and --dump.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "../base/mem.h"
#include "../io/connector.h"
#include "../runtime/runtime.h"
#include "../zset/batch.h"
#include "pipeline.h"

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const char *human(double v, char *b, size_t n)
{
    if (v >= 1e9)
        snprintf(b, n, "%.2fG", v / 1e9);
    else if (v >= 1e6)
        snprintf(b, n, "%.2fM", v / 1e6);
    else if (v >= 1e3)
        snprintf(b, n, "%.1fK", v / 1e3);
    else
        snprintf(b, n, "%.0f", v);
    return b;
}

typedef struct Ctl {
    const Circuit *c;
    const PipelineOpts *o;
    Runtime *rt;
    Connectors cs;
    Arena *in_arena;
    Piece **lists; /* [relation * W + worker] */
    double t0, last_report;
    int64_t rows;
    bool tty;
} Ctl;

static void progress(Ctl *k, bool final)
{
    double t = now_s(), el = t - k->t0;
    char b1[32], b2[32];
    if (k->o->progress == 0)
        return;
    if (!final && t - k->last_report < (k->tty ? 1.0 : 5.0))
        return;
    k->last_report = t;
    Buf line = BUF_INIT;
    for (int i = 0; i < k->c->nrels; i++) {
        const Relation *r = &k->c->rels[i];
        if (!r->is_table)
            continue;
        int64_t n = 0;
        bool any = false;
        for (int j = 0; j < k->cs.nin; j++)
            if (input_rel(k->cs.in[j]) == i) {
                n += input_rows(k->cs.in[j]);
                any = true;
            }
        if (any)
            buf_printf(&line, "%s: %s rows | ", r->name, human((double)n, b1, sizeof(b1)));
    }
    buf_printf(&line, "%s rows/s | step %lld | mem %.0f MB | %.1f s",
               human(el > 0 ? (double)k->rows / el : 0, b2, sizeof(b2)),
               (long long)rt_steps(k->rt), (double)mem_rss_bytes() / 1048576.0, el);
    if (k->tty)
        fprintf(stderr, "\r\033[K%s", buf_cstr(&line));
    else
        fprintf(stderr, "sluice: progress: %s\n", buf_cstr(&line));
    fflush(stderr);
    buf_free(&line);
}

/* Deliver this step's changes of every relation that has outputs. */
static int deliver(Ctl *k, Err *err)
{
    const Circuit *c = k->c;
    for (int i = 0; i < c->nrels; i++) {
        const Relation *r = &c->rels[i];
        bool has = false;
        for (int j = 0; j < k->cs.nout; j++)
            has = has || output_rel(k->cs.out[j]) == i;
        if (!has || r->sink < 0)
            continue;
        BatchBuilder *bb = bb_new();
        for (int w = 0; w < rt_workers(k->rt); w++) {
            Buf *ch = op_sink_changes(rt_op(k->rt, w, r->sink));
            size_t pos = 0;
            XRec x;
            while (ch && xrec_next(ch, &pos, &x))
                bb_add(bb, x.k, x.kn, NULL, 0, x.w);
        }
        Batch *b = bb_finish(bb);
        int rc = 0;
        for (int j = 0; j < k->cs.nout && !rc; j++)
            if (output_rel(k->cs.out[j]) == i)
                rc = output_write(k->cs.out[j], rt_steps(k->rt), b, err) ||
                     output_flush(k->cs.out[j], err);
        batch_unref(b);
        if (rc)
            return err->code;
    }
    return 0;
}

static int run_loop(Ctl *k, Err *err)
{
    const PipelineOpts *o = k->o;
    int W = rt_workers(k->rt);
    int64_t step_rows = o->step_rows > 0 ? o->step_rows : (int64_t)W * 1048576;
    bool announced = false;
    for (;;) {
        if (stop_requested) {
            if (k->tty)
                fputc('\n', stderr);
            fprintf(stderr, "sluice: stop requested; finishing at step %lld\n",
                    (long long)rt_steps(k->rt));
            break;
        }
        arena_reset(k->in_arena);
        memset(k->lists, 0, sizeof(Piece *) * (size_t)(W * k->c->nrels));
        int64_t produced = 0;
        int active = 0;
        for (int j = 0; j < k->cs.nin; j++)
            active += !input_done(k->cs.in[j]);
        for (int j = 0; j < k->cs.nin; j++) {
            InputConn *ic = k->cs.in[j];
            if (input_done(ic))
                continue;
            int rel = input_rel(ic);
            /* appends to the table's per-worker lists: several connectors
               may feed one table */
            int64_t share = step_rows / (active ? active : 1);
            int64_t n = input_next(ic, share > 0 ? share : 1, k->in_arena, W,
                                   &k->lists[rel * W], err);
            if (n < 0)
                return err->code;
            produced += n;
        }
        for (int r = 0; r < k->c->nrels; r++)
            for (int w = 0; w < W; w++)
                rt_set_input(k->rt, w, r, k->lists[r * W + w]);
        bool all_done = true;
        for (int j = 0; j < k->cs.nin; j++)
            all_done = all_done && input_done(k->cs.in[j]);
        if (produced == 0 && rt_steps(k->rt) > 0) {
            if (all_done) {
                if (o->until_done)
                    break;
                if (!announced) {
                    if (k->tty)
                        fputc('\n', stderr);
                    fprintf(stderr, "sluice: all inputs have ended; the pipeline is idle "
                                    "(Ctrl-C or SIGTERM stops it)\n");
                    announced = true;
                }
                usleep(50000);
                continue;
            }
            /* rate-limited inputs: wait for the next row to be due */
            double wait = 1.0;
            for (int j = 0; j < k->cs.nin; j++)
                if (!input_done(k->cs.in[j]))
                    wait = fmin(wait, input_wait(k->cs.in[j]));
            usleep((useconds_t)(fmax(wait, 0.0005) * 1e6));
            continue;
        }
        if (rt_step(k->rt, err))
            return err->code;
        k->rows += produced;
        if (deliver(k, err))
            return err->code;
        progress(k, false);
        if (all_done && o->until_done)
            break;
    }
    return 0;
}

int pipeline_run(const Circuit *c, const PipelineOpts *o, Err *err)
{
    Ctl k = {0};
    int rc;
    k.c = c;
    k.o = o;
    k.tty = o->progress == 1 ? isatty(2) : (o->progress < 0 && isatty(2));
    if (connectors_open(c, true, &k.cs, err))
        return err->code;
    k.rt = rt_new(c, o->workers);
    k.in_arena = arena_new(1 << 20);
    k.lists = sl_calloc((size_t)(o->workers * (c->nrels + 1)), sizeof(Piece *));
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    k.t0 = k.last_report = now_s();
    rc = run_loop(&k, err);
    double el = now_s() - k.t0;
    if (k.tty && o->progress)
        fputc('\n', stderr);
    if (!rc) {
        char b1[32], b2[32];
        int64_t bad = 0;
        for (int j = 0; j < k.cs.nin; j++)
            bad += input_errors(k.cs.in[j]);
        fprintf(stderr,
                "sluice: done: %s rows in %.2f s (%s rows/s), %lld steps, %d worker%s, peak "
                "memory %.1f MB\n",
                human((double)k.rows, b1, sizeof(b1)), el,
                human(el > 0 ? (double)k.rows / el : 0, b2, sizeof(b2)),
                (long long)rt_steps(k.rt), o->workers, o->workers == 1 ? "" : "s",
                (double)mem_peak_rss_bytes() / 1048576.0);
        if (bad)
            fprintf(stderr, "sluice: %lld bad input record%s skipped (see messages above)\n",
                    (long long)bad, bad == 1 ? "" : "s");
        for (int i = 0; i < c->nrels; i++) {
            int64_t dz = 0;
            for (int j = 0; j < c->nnodes; j++)
                if (c->nodes[j]->owner == i)
                    dz += rt_divzero_node(k.rt, j);
            if (dz)
                fprintf(stderr, "sluice: %s %s: %lld division%s by zero gave NULL\n",
                        c->rels[i].is_table ? "table" : "view", c->rels[i].name, (long long)dz,
                        dz == 1 ? "" : "s");
        }
        if (o->dump_dir)
            rc = pipeline_dump(c, k.rt, o->dump_dir, err);
    }
    rt_free(k.rt);
    connectors_close(&k.cs);
    arena_free(k.in_arena);
    sl_free(k.lists);
    return rc;
}
