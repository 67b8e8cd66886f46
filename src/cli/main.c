/*
 * cli/main.c - the sluice command: `run` compiles a program and runs it
 * (with --http, beside the HTTP API of server/), `check` compiles it and
 * prints the circuit (`check OLD NEW` and `diff` compare two programs:
 * diff.c); `query`, `push`, `tail` and `stats` are thin clients
 * of a running pipeline's API (client.c). Exit status: 0 success, 1 error
 * in the program, while running or answered by the server, 2 bad command
 * line.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>
#include <sys/stat.h>

#include "../base/mem.h"
#include "../circuit/circuit.h"
#include "../io/connector.h"
#include "../pipeline/boot.h"
#include "../pipeline/oneshot.h"
#include "../pipeline/pipeline.h"
#include "../pgwire/pgwire.h"
#include "../server/server.h"
#include "../sql/sql.h"
#include "../cluster/net.h"
#include "client.h"
#include "diff.h"
#include "lineagecmd.h"
#include "launch.h"
#include "mgrcli.h"

#define SLUICE_VERSION "0.1.0"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: sluice run PROGRAM.sql [--workers N] [--until-done] [--dump DIR]\n"
            "                  [--step-rows N] [--progress|--no-progress]\n"
            "                  [--http [HOST:]PORT] [--pg [HOST:]PORT] [--paused]\n"
            "                  [--http-max-body BYTES]\n"
            "                  [--http-buffer RECORDS] [--egress-buffer BYTES]\n"
            "                  [--query-timeout SECS] [--query-memory BYTES]\n"
            "                  [--storage DIR] [--fault-tolerance MODE]\n"
            "                  [--checkpoint-interval SECS] [--s3-endpoint URL]\n"
            "                  [--memory-limit BYTES|none]\n"
            "                  [--config FILE] [--hosts H [--hostfile FILE]\n"
            "                  [--mca KEY VALUE]... [--step-deadline SECS]]\n"
            "       sluice check PROGRAM.sql\n"
            "       sluice check OLD.sql NEW.sql [--format text|json]\n"
            "       sluice diff --storage DIR NEW.sql [--format text|json] [--s3-endpoint URL]\n"
            "       sluice lineage PROGRAM.sql [--format json|dot|openlineage]\n"
            "                      [--impact TABLE.COLUMN [--format text|json]]\n"
            "       sluice query URL SQL [--format text|json|csv]\n"
            "       sluice push URL TABLE FILE [--format json|csv] [--update-format F] [--wait]\n"
            "       sluice tail URL VIEW [--format json|csv] [--snapshot] [--backpressure]\n"
            "       sluice stats URL [--format json|prometheus|memory]\n"
            "       sluice serve --dir DIR [--http [HOST:]PORT] (the pipeline manager)\n"
            "       sluice create|start|pause|stop|delete|status|list URL ... (its clients)\n"
            "       sluice --version\n"
            "\n"
            "run     compile the program and run it: tables are fed by their connectors,\n"
            "        views are kept up to date step by step\n"
            "  --workers N    worker threads in all (default 1; with --hosts, one per host)\n"
            "  --until-done   stop once every input connector has ended\n"
            "  --dump DIR     at the end, write DIR/<name>.csv for every materialized\n"
            "                 table and view (sorted rows, header line)\n"
            "  --step-rows N  most input rows per step (default: sized by what steps\n"
            "                 hold, at most 1048576 per worker)\n"
            "  --http [HOST:]PORT  serve the HTTP API (docs/http.md); port 0 picks a free\n"
            "                 port, printed as \"sluice: http: listening on HOST:PORT\"\n"
            "  --pg [HOST:]PORT  serve PostgreSQL's wire protocol (psql, drivers;\n"
            "                 docs/pg-wire.md); port 0 picks a free port, printed as\n"
            "                 \"sluice: pg: listening on HOST:PORT\"\n"
            "  --paused       start paused (POST /start resumes)\n"
            "  --http-max-body BYTES  largest request body (default 64M)\n"
            "  --http-buffer RECORDS  HTTP input queue bound (default 1000000)\n"
            "  --http-max-connections N  open HTTP connections (default 256)\n"
            "  --http-idle-timeout SECS  close idle connections (default 60; 0: never)\n"
            "  --egress-stall-timeout SECS  disconnect a backpressure subscriber that\n"
            "                 reads nothing this long (default 30)\n"
            "  --api-key KEY, --api-key-ro KEY  require Authorization: Bearer KEY\n"
            "                 (read-only keys only read; docs/security.md)\n"
            "  --allowed-host NAME  a Host/Origin name to accept besides loopback\n"
            "  --tls-cert FILE --tls-key FILE  serve HTTPS\n"
            "  --egress-buffer BYTES  per-subscriber /egress queue (default 16M)\n"
            "  --query-timeout SECS  time limit of each /query (default 30; 0 = none)\n"
            "  --query-memory BYTES  memory budget of each /query (default 1G; 0 = none)\n"
            "  --storage DIR  keep checkpoints, the journal and logged HTTP input in DIR;\n"
            "                 a restart with the same DIR resumes where the last run\n"
            "                 stopped or died (docs/fault-tolerance.md)\n"
            "  --bootstrap allow|reject|await_approval  DIR holds a checkpoint of another\n"
            "                 program: keep what still holds and compute what changed\n"
            "                 (allow), refuse (reject), or start paused until POST /approve\n"
            "                 (await_approval, the default with --http; without it the\n"
            "                 default refuses): docs/bootstrapping.md\n"
            "  --no-join-narrowing  compile joins as builds before join narrowing did (their\n"
            "                 unread input columns kept as constants), so the storage stays\n"
            "                 readable by such a build; a storage written so is restarted in\n"
            "                 its layout anyway (docs/fault-tolerance.md)\n"
            "  --fault-tolerance exactly_once|at_least_once|none  (default exactly_once)\n"
            "  --checkpoint-interval SECS  seconds between checkpoints (default 60;\n"
            "                 0 = only on request, POST /checkpoint)\n"
            "  --checkpoint-timeout SECS  a checkpoint whose writing process runs longer\n"
            "                 is killed and fails (default 3600; 0 = no limit)\n"
            "  --on-error reject|stop  a runtime error (overflow, bad cast) over input\n"
            "                 records: reject those records and go on (default), or stop\n"
            "  --s3-endpoint URL  with --storage s3://BUCKET/PREFIX: the S3-compatible\n"
            "                 server (credentials: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)\n"
            "  --memory-limit BYTES|none  state kept in memory before traces spill to\n"
            "                 files (K, M, G; default 80%% of the cgroup limit or of\n"
            "                 MemTotal; docs/memory.md)\n"
            "  --config FILE  runtime settings as JSON: workers, hosts, storage, s3_endpoint,\n"
            "                 fault_tolerance, checkpoint_interval_secs,\n"
            "                 checkpoint_timeout_secs, step_deadline_secs,\n"
            "                 http_max_connections, http_idle_timeout_secs, api_keys,\n"
            "                 query_timeout_secs, query_memory_bytes, on_error, pg_listen,\n"
            "                 memory_limit\n"
            "                 (flags win; api_keys add to --api-key)\n"
            "  --hosts H      scale-out: run as H processes (an MPI job started through\n"
            "                 mpirun) that split the workers evenly and step together;\n"
            "                 rank 0 serves the HTTP API (docs/scale-out.md). Under an\n"
            "                 external mpirun/srun, H is the job's size.\n"
            "  --hostfile FILE  the hosts (Open MPI hostfile), passed to mpirun\n"
            "  --mca KEY VALUE  an Open MPI parameter, passed to mpirun (repeatable)\n"
            "  --step-deadline SECS  end the job when an exchange between hosts makes no\n"
            "                 progress for SECS (default 60; 0 = never)\n"
            "check   compile the program; print the circuit or the errors\n"
            "check OLD.sql NEW.sql, diff --storage DIR NEW.sql  what a restart with\n"
            "        NEW.sql would keep, recompute from stored state, re-read from a\n"
            "        source and drop, per table and view (DIR: the program of its newest\n"
            "        checkpoint); changes nothing; exit status 0 even when they differ\n"
            "        (docs/bootstrapping.md)\n"
            "lineage for every view column, the table columns it comes from (identity,\n"
            "        transformation, aggregation) and per view those that decide its rows\n"
            "        (filter, join_key, group_key, order); --impact T.X: what a change of\n"
            "        T.X can change (docs/lineage.md)\n"
            "query, push, tail, stats  clients of a running pipeline's HTTP API\n"
            "        (URL like http://127.0.0.1:8080 or https://...; options --api-key KEY\n"
            "        or env SLUICE_API_KEY, --cacert FILE, --insecure)\n"
            "serve   keep named pipelines in DIR, each a supervised `sluice run` restarted\n"
            "        when it dies; REST API under /v0/pipelines (docs/manager.md)\n"
            "create, start, pause, stop, delete, status, list  clients of a manager\n");
}

/* circuit_compile_with's flags of `run` (--no-join-narrowing). */
static int compile_flags;

/* Compile the program in path (as `run` does when fingerprint is given);
   its text to *text_out (sl_free) when text_out is not NULL. */
static Circuit *compile_file_fp(const char *path, uint64_t *fingerprint, char **text_out)
{
    Err e = {0};
    char *text = cli_read_file(path, &e);
    if (!text) {
        cli_print_err(path, &e);
        return NULL;
    }
    if (fingerprint)
        *fingerprint = XXH64(text, strlen(text), 0);
    Circuit *c = NULL;
    if (fingerprint)
        c = cli_compile_run_flags(text, path, compile_flags);
    else if (circuit_compile(text, &c, &e))
        cli_print_err(path, &e);
    if (text_out && c)
        *text_out = text;
    else
        sl_free(text);
    return c;
}

static Circuit *compile_file(const char *path) { return compile_file_fp(path, NULL, NULL); }

static int parse_on_error(const char *v)
{
    if (v && !strcmp(v, "reject"))
        return ONERR_REJECT;
    if (v && !strcmp(v, "stop"))
        return ONERR_STOP;
    fprintf(stderr, "sluice: --on-error needs reject or stop, not \"%s\"\n", v ? v : "");
    exit(2);
}

static int parse_ft(const char *v)
{
    if (v && !strcmp(v, "exactly_once"))
        return FT_EXACTLY_ONCE;
    if (v && !strcmp(v, "at_least_once"))
        return FT_AT_LEAST_ONCE;
    if (v && !strcmp(v, "none"))
        return FT_NONE;
    fprintf(stderr, "sluice: --fault-tolerance needs exactly_once, at_least_once or none, not "
                    "\"%s\"\n",
            v ? v : "");
    exit(2);
}

/* --config FILE: runtime settings as a JSON object; unknown keys are
   errors. Settings not given keep their values (flags are applied after). */
/* Scale-out settings a config may give. */
typedef struct CfgHosts {
    int hosts;          /* 0: not given */
    double deadline;    /* < 0: not given */
    bool workers;       /* "workers" given */
} CfgHosts;

/* HTTP server settings from --config and the flags (keys and hosts add up;
   other flags win over the config). Static: they live as long as the run. */
enum { MAX_SRV_LIST = 64 };
static ServerKey srv_keys[MAX_SRV_LIST];
static int srv_nkeys;
static const char *srv_hosts[MAX_SRV_LIST];
static int srv_nhosts;
static int cfg_max_conn, cfg_idle;
/* --pg [HOST:]PORT or pg_listen in --config: the PostgreSQL wire protocol
   (pgwire/); pg_port < 0 when not asked for. */
static char pg_host[256] = "127.0.0.1";
static int pg_port = -1;

static void parse_pg_addr(const char *v)
{
    const char *colon = v ? strrchr(v, ':') : NULL;
    const char *port = colon ? colon + 1 : v;
    if (colon && colon != v)
        snprintf(pg_host, sizeof(pg_host), "%.*s", (int)(colon - v), v);
    char *end;
    long n = port && *port ? strtol(port, &end, 10) : -1;
    if (!port || !*port || *end || n < 0 || n > 65535) {
        fprintf(stderr, "sluice: --pg (pg_listen) needs HOST:PORT or PORT (0 picks a free "
                        "port), not \"%s\"\n",
                v ? v : "");
        exit(2);
    }
    pg_port = (int)n;
}

static void add_key(const char *k, bool ro)
{
    if (!k || !*k || srv_nkeys >= MAX_SRV_LIST) {
        fprintf(stderr, "sluice: an API key must be non-empty (at most %d keys)\n",
                MAX_SRV_LIST);
        exit(2);
    }
    srv_keys[srv_nkeys++] = (ServerKey){k, ro};
}

static void add_host(const char *h)
{
    if (!h || !*h || srv_nhosts >= MAX_SRV_LIST) {
        fprintf(stderr, "sluice: --allowed-host needs a name (at most %d)\n", MAX_SRV_LIST);
        exit(2);
    }
    srv_hosts[srv_nhosts++] = h;
}

/* api_keys: ["KEY", {"key": "KEY", "read_only": true}, ...]; false if bad */
static bool cfg_keys(const cJSON *v)
{
    const cJSON *it;
    if (!cJSON_IsArray(v))
        return false;
    cJSON_ArrayForEach(it, v)
    {
        const cJSON *k = cJSON_IsObject(it) ? cJSON_GetObjectItemCaseSensitive(it, "key") : it;
        const cJSON *ro = cJSON_IsObject(it) ? cJSON_GetObjectItemCaseSensitive(it, "read_only")
                                             : NULL;
        if (!cJSON_IsString(k) || (ro && !cJSON_IsBool(ro)))
            return false;
        add_key(sl_strdup(k->valuestring), cJSON_IsTrue(ro));
    }
    return true;
}

/* Bounds of each /query: --query-timeout, --query-memory, and the config's
   query_timeout_secs, query_memory_bytes (pipeline/oneshot.h). */
static QueryLimits query_limits = {30, (int64_t)1 << 30};

static int64_t parse_size(const char *flag, const char *v);

/* --memory-limit BYTES (K/M/G suffixes) or "none" (docs/memory.md). */
static int64_t parse_memory_limit(const char *flag, const char *v)
{
    return v && !strcmp(v, "none") ? -1 : parse_size(flag, v);
}

/* --bootstrap or bootstrap_policy in --config (BOOT_*; cli/diff.h). */
static int boot_policy = BOOT_UNSET;

static void set_boot_policy(const char *v, const char *where)
{
    boot_policy = cli_boot_policy(v);
    if (boot_policy < 0) {
        fprintf(stderr, "sluice: %s needs allow, reject or await_approval, not \"%s\"\n", where,
                v ? v : "");
        exit(2);
    }
}

static void load_config(const char *path, PipelineOpts *o, char **storage, CfgHosts *ch)
{
    Err e = {0};
    char *text = path ? cli_read_file(path, &e) : NULL;
    if (!text) {
        fprintf(stderr, "sluice: --config: %s\n", path ? e.msg : "needs a file");
        exit(2);
    }
    cJSON *j = cJSON_Parse(text);
    sl_free(text);
    if (!cJSON_IsObject(j)) {
        fprintf(stderr, "sluice: --config %s: not a JSON object\n", path);
        exit(2);
    }
    const cJSON *v;
    cJSON_ArrayForEach(v, j)
    {
        const char *k = v->string;
        if (!strcmp(k, "workers") && cJSON_IsNumber(v) && v->valuedouble >= 1 &&
            v->valuedouble <= 256) {
            o->workers = (int)v->valuedouble;
            ch->workers = true;
        } else if (!strcmp(k, "hosts") && cJSON_IsNumber(v) && v->valuedouble >= 1 &&
                   v->valuedouble <= 256)
            ch->hosts = (int)v->valuedouble;
        else if (!strcmp(k, "step_deadline_secs") && cJSON_IsNumber(v) && v->valuedouble >= 0)
            ch->deadline = v->valuedouble;
        else if (!strcmp(k, "storage") && cJSON_IsString(v) && *v->valuestring)
            *storage = sl_strdup(v->valuestring);
        else if (!strcmp(k, "s3_endpoint") && cJSON_IsString(v) && *v->valuestring)
            setenv("SLUICE_S3_ENDPOINT", v->valuestring, 1);
        else if (!strcmp(k, "fault_tolerance") && cJSON_IsString(v))
            o->fault_tolerance = parse_ft(v->valuestring);
        else if (!strcmp(k, "on_error") && cJSON_IsString(v))
            o->on_error = parse_on_error(v->valuestring);
        else if (!strcmp(k, "checkpoint_interval_secs") && cJSON_IsNumber(v) &&
                 v->valuedouble >= 0)
            o->checkpoint_interval = v->valuedouble;
        else if (!strcmp(k, "checkpoint_timeout_secs") && cJSON_IsNumber(v) &&
                 v->valuedouble >= 0)
            o->checkpoint_timeout = v->valuedouble;
        else if (!strcmp(k, "http_max_connections") && cJSON_IsNumber(v) &&
                 v->valuedouble >= 1 && v->valuedouble <= 100000)
            cfg_max_conn = (int)v->valuedouble;
        else if (!strcmp(k, "http_idle_timeout_secs") && cJSON_IsNumber(v) &&
                 v->valuedouble >= 0 && v->valuedouble <= 1e6)
            cfg_idle = v->valuedouble > 0 ? (int)v->valuedouble : -1;
        else if (!strcmp(k, "api_keys") && cfg_keys(v))
            ;
        else if (!strcmp(k, "pg_listen") && cJSON_IsString(v))
            parse_pg_addr(v->valuestring);
        else if (!strcmp(k, "pg_listen") && cJSON_IsNumber(v)) {
            char num[32];
            snprintf(num, sizeof(num), "%.0f", v->valuedouble);
            parse_pg_addr(num);
        }
        else if (!strcmp(k, "memory_limit") && cJSON_IsString(v))
            o->memory_limit = parse_memory_limit("memory_limit", v->valuestring);
        else if (!strcmp(k, "memory_limit") && cJSON_IsNumber(v) && v->valuedouble >= 1 &&
                 v->valuedouble <= 1e15)
            o->memory_limit = (int64_t)v->valuedouble;
        else if (!strcmp(k, "bootstrap_policy") && cJSON_IsString(v))
            set_boot_policy(v->valuestring, "bootstrap_policy");
        else if (!strcmp(k, "query_timeout_secs") && cJSON_IsNumber(v) && v->valuedouble >= 0)
            query_limits.timeout_secs = v->valuedouble;
        else if (!strcmp(k, "query_memory_bytes") && cJSON_IsNumber(v) && v->valuedouble >= 0 &&
                 v->valuedouble <= 1e15)
            query_limits.memory_bytes = (int64_t)v->valuedouble;
        else {
            fprintf(stderr, "sluice: --config %s: bad or unknown setting \"%s\" (known: "
                            "workers, hosts, storage, s3_endpoint, fault_tolerance, "
                            "checkpoint_interval_secs, checkpoint_timeout_secs, step_deadline_secs, on_error, "
                            "http_max_connections, http_idle_timeout_secs, api_keys, "
                            "query_timeout_secs, query_memory_bytes, pg_listen, "
                            "memory_limit, bootstrap_policy)\n",
                    path, k);
            exit(2);
        }
    }
    cJSON_Delete(j);
}

static long parse_long(const char *flag, const char *v, long lo, long hi)
{
    char *end;
    errno = 0;
    long n = v ? strtol(v, &end, 10) : 0;
    if (!v || errno || *end || n < lo || n > hi) {
        fprintf(stderr, "sluice: %s needs a number between %ld and %ld\n", flag, lo, hi);
        exit(2);
    }
    return n;
}

/* A byte count with an optional K, M or G suffix (powers of 1024). */
static int64_t parse_size(const char *flag, const char *v)
{
    char *end;
    errno = 0;
    double n = v ? strtod(v, &end) : -1;
    if (v && !errno && end != v) {
        if (*end == 'K' || *end == 'k')
            n *= 1024, end++;
        else if (*end == 'M' || *end == 'm')
            n *= 1048576, end++;
        else if (*end == 'G' || *end == 'g')
            n *= 1073741824.0, end++;
    }
    if (!v || errno || end == v || *end || n < 1 || n > 1e15) {
        fprintf(stderr, "sluice: %s needs a size in bytes (suffix K, M or G allowed)\n", flag);
        exit(2);
    }
    return (int64_t)n;
}

/* --http [HOST:]PORT */
static void parse_addr(const char *v, ServerOpts *so, char *host, size_t hn)
{
    const char *colon = v ? strrchr(v, ':') : NULL;
    const char *port = colon ? colon + 1 : v;
    if (colon && colon != v)
        snprintf(host, hn, "%.*s", (int)(colon - v), v);
    so->host = host;
    char *end;
    long n = port && *port ? strtol(port, &end, 10) : -1;
    if (!port || !*port || *end || n < 0 || n > 65535) {
        fprintf(stderr, "sluice: --http needs HOST:PORT or PORT (0 picks a free port), not "
                        "\"%s\"\n",
                v ? v : "");
        exit(2);
    }
    so->port = (int)n;
}

/* A scale-out follower (rank > 0): compile the same program quietly (rank
   0 reports its errors), then serve rank 0's commands until it stops. */
static int follow(const char *path, PipelineOpts *o, char *cfg_storage)
{
    signal(SIGINT, SIG_IGN); /* rank 0 decides when the job stops */
    signal(SIGTERM, SIG_IGN);
    signal(SIGUSR1, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    fflush(stderr);
    int saved = dup(2), devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0) {
        dup2(devnull, 2);
        close(devnull);
    }
    compile_flags = cli_storage_flags(o->storage, compile_flags, true); /* as rank 0 does */
    Circuit *c = compile_file_fp(path, &o->fingerprint, NULL);
    fflush(stderr);
    if (saved >= 0) {
        dup2(saved, 2);
        close(saved);
    }
    int rc = 1;
    if (!c) {
        pipeline_follow_failed("cannot compile the program on this host");
    } else {
        Err e = {0};
        rc = pipeline_follow(c, o, &e);
        if (rc)
            fprintf(stderr, "sluice: host %d (%s): %s\n", net_host(), net_host_name(net_host()),
                    e.msg);
        circuit_free(c);
    }
    net_finalize();
    sl_free(cfg_storage);
    return rc ? 1 : 0;
}

static int cmd_run(int argc, char **argv)
{
    PipelineOpts o = {.workers = 1, .progress = -1, .checkpoint_interval = 60,
                     .checkpoint_timeout = 3600};
    LaunchOpts lo = {0};
    const char *mca[128]; /* --mca pairs */
    lo.mca = mca;
    char *cfg_storage = NULL;
    CfgHosts ch = {0, -1, false};
    for (int i = 0; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--config"))
            load_config(argv[i + 1], &o, &cfg_storage, &ch);
    bool workers_given = ch.workers, hosts_given = ch.hosts > 0;
    double deadline = ch.deadline >= 0 ? ch.deadline : 60;
    lo.hosts = ch.hosts;
    if (cfg_storage)
        o.storage = cfg_storage;
    ServerOpts so = {.host = "127.0.0.1", .port = 8080, .max_body = 64 << 20,
                     .egress_buffer = 16 << 20, .push_wait = 5.0,
                     .max_connections = cfg_max_conn, .idle_timeout = cfg_idle};
    char host[256] = "127.0.0.1";
    bool http = false;
    const char *path = NULL;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--workers")) {
            o.workers = (int)parse_long(a, ++i < argc ? argv[i] : NULL, 1, 256);
            workers_given = true;
        } else if (!strcmp(a, "--hosts")) {
            lo.hosts = (int)parse_long(a, ++i < argc ? argv[i] : NULL, 1, 256);
            hosts_given = true;
        } else if (!strcmp(a, "--hostfile")) {
            if (++i >= argc || !*argv[i]) {
                fprintf(stderr, "sluice: --hostfile needs a file\n");
                return 2;
            }
            lo.hostfile = argv[i];
        } else if (!strcmp(a, "--mca")) {
            if (lo.nmca >= 64) {
                fprintf(stderr, "sluice: more than 64 --mca options\n");
                return 2;
            }
            if (i + 2 >= argc) {
                fprintf(stderr, "sluice: --mca needs a key and a value\n");
                return 2;
            }
            mca[2 * lo.nmca] = argv[i + 1];
            mca[2 * lo.nmca + 1] = argv[i + 2];
            lo.nmca++;
            i += 2;
        } else if (!strcmp(a, "--step-deadline")) {
            const char *v = ++i < argc ? argv[i] : NULL;
            char *end;
            deadline = v ? strtod(v, &end) : -1;
            if (!v || *end || deadline < 0) {
                fprintf(stderr, "sluice: --step-deadline needs seconds (>= 0)\n");
                return 2;
            }
        }
        else if (!strcmp(a, "--until-done"))
            o.until_done = true;
        else if (!strcmp(a, "--no-join-narrowing"))
            compile_flags |= CC_NO_NARROW;
        else if (!strcmp(a, "--dump")) {
            if (++i >= argc) {
                fprintf(stderr, "sluice: --dump needs a directory\n");
                return 2;
            }
            o.dump_dir = argv[i];
        } else if (!strcmp(a, "--step-rows"))
            o.step_rows = parse_long(a, ++i < argc ? argv[i] : NULL, 1, 1L << 40);
        else if (!strcmp(a, "--progress"))
            o.progress = 1;
        else if (!strcmp(a, "--no-progress"))
            o.progress = 0;
        else if (!strcmp(a, "--http")) {
            http = true;
            parse_addr(++i < argc ? argv[i] : NULL, &so, host, sizeof(host));
        } else if (!strcmp(a, "--pg"))
            parse_pg_addr(++i < argc ? argv[i] : NULL);
        else if (!strcmp(a, "--bootstrap"))
            set_boot_policy(++i < argc ? argv[i] : NULL, "--bootstrap");
        else if (!strcmp(a, "--paused"))
            o.start_paused = true;
        else if (!strcmp(a, "--http-max-body"))
            so.max_body = parse_size(a, ++i < argc ? argv[i] : NULL);
        else if (!strcmp(a, "--http-buffer"))
            o.queue_records = parse_long(a, ++i < argc ? argv[i] : NULL, 1, 1L << 40);
        else if (!strcmp(a, "--egress-buffer"))
            so.egress_buffer = parse_size(a, ++i < argc ? argv[i] : NULL);
        else if (!strcmp(a, "--http-max-connections"))
            so.max_connections = (int)parse_long(a, ++i < argc ? argv[i] : NULL, 1, 100000);
        else if (!strcmp(a, "--http-idle-timeout")) {
            long t = parse_long(a, ++i < argc ? argv[i] : NULL, 0, 1000000);
            so.idle_timeout = t ? (int)t : -1;
        } else if (!strcmp(a, "--egress-stall-timeout"))
            so.egress_stall = (double)parse_long(a, ++i < argc ? argv[i] : NULL, 1, 1000000);
        else if (!strcmp(a, "--api-key") || !strcmp(a, "--api-key-ro"))
            add_key(++i < argc ? argv[i] : NULL, a[9] == '-');
        else if (!strcmp(a, "--allowed-host"))
            add_host(++i < argc ? argv[i] : NULL);
        else if (!strcmp(a, "--tls-cert") || !strcmp(a, "--tls-key")) {
            if (++i >= argc || !*argv[i]) {
                fprintf(stderr, "sluice: %s needs a PEM file\n", a);
                return 2;
            }
            *(a[6] == 'c' ? &so.tls_cert : &so.tls_key) = argv[i];
        }
        else if (!strcmp(a, "--query-timeout")) {
            const char *v = ++i < argc ? argv[i] : NULL;
            char *end;
            double d = v ? strtod(v, &end) : -1;
            if (!v || *end || d < 0) {
                fprintf(stderr, "sluice: --query-timeout needs seconds (>= 0; 0 = none)\n");
                return 2;
            }
            query_limits.timeout_secs = d;
        } else if (!strcmp(a, "--query-memory")) {
            const char *v = ++i < argc ? argv[i] : NULL;
            query_limits.memory_bytes = v && !strcmp(v, "0") ? 0 : parse_size(a, v);
        } else if (!strcmp(a, "--memory-limit"))
            o.memory_limit = parse_memory_limit(a, ++i < argc ? argv[i] : NULL);
        else if (!strcmp(a, "--config"))
            ++i; /* read above */
        else if (!strcmp(a, "--storage")) {
            if (++i >= argc || !*argv[i]) {
                fprintf(stderr, "sluice: --storage needs a directory\n");
                return 2;
            }
            o.storage = argv[i];
        } else if (!strcmp(a, "--s3-endpoint")) {
            if (++i >= argc || !*argv[i]) {
                fprintf(stderr, "sluice: --s3-endpoint needs a URL (http://HOST:PORT)\n");
                return 2;
            }
            setenv("SLUICE_S3_ENDPOINT", argv[i], 1);
        } else if (!strcmp(a, "--fault-tolerance"))
            o.fault_tolerance = parse_ft(++i < argc ? argv[i] : NULL);
        else if (!strcmp(a, "--on-error"))
            o.on_error = parse_on_error(++i < argc ? argv[i] : NULL);
        else if (!strcmp(a, "--checkpoint-interval")) {
            const char *v = ++i < argc ? argv[i] : NULL;
            char *end;
            double d = v ? strtod(v, &end) : -1;
            if (!v || *end || d < 0) {
                fprintf(stderr, "sluice: --checkpoint-interval needs seconds (>= 0)\n");
                return 2;
            }
            o.checkpoint_interval = d;
        } else if (!strcmp(a, "--checkpoint-timeout")) {
            const char *v = ++i < argc ? argv[i] : NULL;
            char *end;
            double d = v ? strtod(v, &end) : -1;
            if (!v || *end || !(d >= 0)) {
                fprintf(stderr, "sluice: --checkpoint-timeout needs seconds (>= 0)\n");
                return 2;
            }
            o.checkpoint_timeout = d;
        }
        else if (a[0] == '-') {
            fprintf(stderr, "sluice: unknown option %s\n", a);
            usage(stderr);
            return 2;
        } else if (path) {
            fprintf(stderr, "sluice: more than one program given (%s and %s)\n", path, a);
            return 2;
        } else
            path = a;
    }
    if (!path) {
        usage(stderr);
        return 2;
    }
    Err e = {0};
    int rc;
    if (!net_launched() && lo.hosts > 1) {
        /* start the MPI job that runs this command as lo.hosts processes */
        int code = launch_mpi(&lo, argc, argv);
        sl_free(cfg_storage);
        return code;
    }
    if (net_launched()) {
        if (net_init(&e)) {
            fprintf(stderr, "sluice: %s\n", e.msg);
            return 1;
        }
        if (hosts_given && lo.hosts != net_hosts()) {
            if (net_host() == 0)
                fprintf(stderr, "sluice: --hosts %d, but the MPI job has %d processes\n",
                        lo.hosts, net_hosts());
            net_finalize();
            return 2;
        }
        o.hosts = net_hosts();
        if (!workers_given)
            o.workers = o.hosts;
        net_set_deadline(deadline);
        if (net_host() > 0)
            return follow(path, &o, cfg_storage);
    }
    char *program = NULL;
    compile_flags = cli_storage_flags(o.storage, compile_flags, false); /* its layout */
    Circuit *c = compile_file_fp(path, &o.fingerprint, &program);
    o.program = program;
    if (!c) {
        pipeline_dismiss_followers();
        net_finalize();
        sl_free(cfg_storage);
        return 1;
    }
    CliBoot boot;
    if (cli_bootstrap(&o, c, compile_flags, program, path, boot_policy, http, &boot)) {
        cli_bootstrap_free(&boot);
        pipeline_dismiss_followers();
        net_finalize();
        circuit_free(c);
        sl_free(program);
        sl_free(cfg_storage);
        return 1;
    }
    Pipeline *p = pipeline_new(c, &o, &e);
    if (!p && boot.plan && boot.plan->unsettled) { /* the old program settles first */
        if (cli_bootstrap_settle(&o, &boot, path) == 0) {
            e = (Err){0};
            p = pipeline_new(c, &o, &e);
        } else {
            e = (Err){0};
            err_set(&e, SL_EIO, "bootstrapping: the storage could not be settled");
        }
    }
    Server *srv = NULL;
    so.keys = srv_keys;
    so.nkeys = srv_nkeys;
    so.allowed_hosts = srv_hosts;
    so.nallowed = srv_nhosts;
    if (p && http) {
        signal(SIGPIPE, SIG_IGN);
        oneshot_set_limits(&query_limits);
        srv = server_start(p, &so, &e);
        if (!srv) {
            pipeline_free(p);
            p = NULL;
        }
    }
    PgServer *pgs = NULL;
    if (p && pg_port >= 0) {
        signal(SIGPIPE, SIG_IGN);
        oneshot_set_limits(&query_limits);
        PgOpts po = {pg_host, pg_port, srv_keys, srv_nkeys, 0, so.tls_cert, so.tls_key};
        pgs = pgwire_start(p, &po, &e);
        if (!pgs) {
            server_stop(srv);
            pipeline_free(p);
            p = NULL;
        }
    }
    if (!p) {
        rc = e.code;
        pipeline_dismiss_followers();
    } else {
        rc = pipeline_run(p, &e);
        pgwire_stop(pgs);
        server_stop(srv);
        pipeline_free(p);
    }
    if (rc)
        cli_print_err(path, &e);
    net_finalize();
    cli_bootstrap_free(&boot);
    circuit_free(c);
    sl_free(program);
    sl_free(cfg_storage);
    return rc ? 1 : 0;
}

static int cmd_check(int argc, char **argv)
{
    if (argc >= 2)
        return cmd_check_diff(argc, argv);
    if (argc != 1) {
        usage(stderr);
        return 2;
    }
    Circuit *c = compile_file(argv[0]);
    if (!c)
        return 1;
    Err e = {0};
    Connectors cs;
    if (connectors_open(c, false, &cs, &e)) {
        cli_print_err(argv[0], &e);
        circuit_free(c);
        return 1;
    }
    connectors_close(&cs);
    Buf b = BUF_INIT;
    circuit_explain(c, &b);
    fwrite(b.p, 1, b.n, stdout);
    buf_free(&b);
    circuit_free(c);
    return 0;
}

/* ---------------------------------------------------------------- clients */

/* Print an API error answer ({"error": ...}) or the raw body. */
static void print_api_error(const HttpResp *r)
{
    Buf b = r->body;
    char *text = sl_strndup(b.p ? (const char *)b.p : "", b.n);
    cJSON *j = cJSON_Parse(text);
    const cJSON *e = j ? cJSON_GetObjectItemCaseSensitive(j, "error") : NULL;
    if (cJSON_IsString(e)) {
        fprintf(stderr, "sluice: HTTP %d: %s\n", r->status, e->valuestring);
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(j, "details");
        const cJSON *errs = d ? cJSON_GetObjectItemCaseSensitive(d, "errors") : NULL;
        const cJSON *it;
        cJSON_ArrayForEach(it, errs)
        {
            const cJSON *ln = cJSON_GetObjectItemCaseSensitive(it, "line");
            const cJSON *rs = cJSON_GetObjectItemCaseSensitive(it, "reason");
            if (cJSON_IsNumber(ln) && cJSON_IsString(rs))
                fprintf(stderr, "  line %d: %s\n", ln->valueint, rs->valuestring);
        }
    } else {
        fprintf(stderr, "sluice: HTTP %d: %s\n", r->status, text);
    }
    cJSON_Delete(j);
    sl_free(text);
}

/* Options of the client subcommands: --name VALUE pairs and flags. */
static const char *opt(int *argc, char **argv, const char *name, bool has_value)
{
    for (int i = 0; i < *argc; i++) {
        if (strcmp(argv[i], name))
            continue;
        const char *v = has_value ? (i + 1 < *argc ? argv[i + 1] : NULL) : name;
        if (has_value && !v) {
            fprintf(stderr, "sluice: %s needs a value\n", name);
            exit(2);
        }
        int k = has_value ? 2 : 1;
        memmove(argv + i, argv + i + k, sizeof(char *) * (size_t)(*argc - i - k));
        *argc -= k;
        return v;
    }
    return NULL;
}

static int no_more_options(int argc, char **argv, int want)
{
    for (int i = 0; i < argc; i++)
        if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "sluice: unknown option %s\n", argv[i]);
            return 2;
        }
    if (argc != want) {
        usage(stderr);
        return 2;
    }
    return 0;
}

/* Options every client subcommand takes: --api-key KEY (or env
   SLUICE_API_KEY), --cacert FILE, --insecure. */
static const char *cli_key, *cli_cacert;
static bool cli_insecure;

static void client_opts(int *argc, char **argv)
{
    cli_key = opt(argc, argv, "--api-key", true);
    if (!cli_key)
        cli_key = getenv("SLUICE_API_KEY");
    cli_cacert = opt(argc, argv, "--cacert", true);
    cli_insecure = opt(argc, argv, "--insecure", false) != NULL;
}

static int client_url(const char *url, HttpUrl *u)
{
    Err e = {0};
    if (http_url_parse(url, u, &e)) {
        fprintf(stderr, "sluice: %s\n", e.msg);
        return 2;
    }
    u->api_key = cli_key && *cli_key ? cli_key : NULL;
    u->cacert = cli_cacert;
    u->insecure = cli_insecure;
    return 0;
}

static int finish(int rc, Err *e, HttpResp *r, bool print_body)
{
    if (rc) {
        fprintf(stderr, "sluice: %s\n", e->msg);
        buf_free(&r->body);
        return 1;
    }
    int ok = r->status >= 200 && r->status < 300;
    if (!ok)
        print_api_error(r);
    else if (print_body)
        fwrite(r->body.p, 1, r->body.n, stdout);
    buf_free(&r->body);
    return ok ? 0 : 1;
}

static int cmd_query(int argc, char **argv)
{
    client_opts(&argc, argv);
    const char *fmt = opt(&argc, argv, "--format", true);
    int rc = no_more_options(argc, argv, 2);
    HttpUrl u;
    if (rc || (rc = client_url(argv[0], &u)))
        return rc;
    Buf t = BUF_INIT;
    buf_puts(&t, "/query?format=");
    http_escape(&t, fmt ? fmt : "text");
    buf_puts(&t, "&sql=");
    http_escape(&t, argv[1]);
    HttpReq rq = {"GET", buf_cstr(&t), NULL, NULL, 0, NULL, NULL, NULL};
    HttpResp r;
    Err e = {0};
    rc = finish(http_do(&u, &rq, &r, &e), &e, &r, true);
    buf_free(&t);
    return rc;
}

static int cmd_push(int argc, char **argv)
{
    client_opts(&argc, argv);
    const char *fmt = opt(&argc, argv, "--format", true);
    const char *upd = opt(&argc, argv, "--update-format", true);
    bool wait = opt(&argc, argv, "--wait", false) != NULL;
    int rc = no_more_options(argc, argv, 3);
    HttpUrl u;
    if (rc || (rc = client_url(argv[0], &u)))
        return rc;
    const char *path = argv[2];
    if (!fmt) {
        const char *dot = strrchr(path, '.');
        if (dot && !strcasecmp(dot, ".csv"))
            fmt = "csv";
        else if (dot && (!strcasecmp(dot, ".json") || !strcasecmp(dot, ".jsonl") ||
                         !strcasecmp(dot, ".ndjson")))
            fmt = "json";
        else {
            fprintf(stderr, "sluice: cannot tell the format of \"%s\" from its name; give "
                            "--format json or --format csv\n",
                    path);
            return 2;
        }
    }
    FILE *f = fopen(path, "rb");
    struct stat stt;
    if (!f || fstat(fileno(f), &stt)) {
        fprintf(stderr, "sluice: cannot open \"%s\": %s\n", path, strerror(errno));
        if (f)
            fclose(f);
        return 1;
    }
    Buf t = BUF_INIT;
    buf_puts(&t, "/ingress/");
    http_escape(&t, argv[1]);
    buf_puts(&t, "?format=");
    http_escape(&t, fmt);
    if (upd) {
        buf_puts(&t, "&update_format=");
        http_escape(&t, upd);
    }
    if (wait)
        buf_puts(&t, "&wait=true");
    HttpReq rq = {"POST", buf_cstr(&t), !strcmp(fmt, "csv") ? "text/csv" : "application/json",
                  NULL, (size_t)stt.st_size, f, NULL, NULL};
    HttpResp r;
    Err e = {0};
    rc = http_do(&u, &rq, &r, &e);
    fclose(f);
    buf_free(&t);
    if (!rc && r.status == 200) {
        char *text = sl_strndup((const char *)r.body.p, r.body.n);
        cJSON *j = cJSON_Parse(text);
        const cJSON *acc = cJSON_GetObjectItemCaseSensitive(j, "accepted");
        const cJSON *ne = cJSON_GetObjectItemCaseSensitive(j, "error_count");
        printf("pushed %.0f record%s into %s (%.0f bad)\n", acc ? acc->valuedouble : 0,
               acc && acc->valuedouble == 1 ? "" : "s", argv[1], ne ? ne->valuedouble : 0);
        const cJSON *it;
        cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(j, "errors"))
        {
            const cJSON *ln = cJSON_GetObjectItemCaseSensitive(it, "line");
            const cJSON *rs = cJSON_GetObjectItemCaseSensitive(it, "reason");
            if (cJSON_IsNumber(ln) && cJSON_IsString(rs))
                fprintf(stderr, "sluice: %s line %d: %s\n", path, ln->valueint, rs->valuestring);
        }
        cJSON_Delete(j);
        sl_free(text);
    }
    return finish(rc, &e, &r, false);
}

static void tail_out(void *arg, const char *p, size_t n)
{
    (void)arg;
    fwrite(p, 1, n, stdout);
    fflush(stdout);
}

static int cmd_tail(int argc, char **argv)
{
    client_opts(&argc, argv);
    const char *fmt = opt(&argc, argv, "--format", true);
    bool snap = opt(&argc, argv, "--snapshot", false) != NULL;
    bool bp = opt(&argc, argv, "--backpressure", false) != NULL;
    int rc = no_more_options(argc, argv, 2);
    HttpUrl u;
    if (rc || (rc = client_url(argv[0], &u)))
        return rc;
    Buf t = BUF_INIT;
    buf_puts(&t, "/egress/");
    http_escape(&t, argv[1]);
    buf_puts(&t, "?format=");
    http_escape(&t, fmt ? fmt : "json");
    if (snap)
        buf_puts(&t, "&snapshot=true");
    if (bp)
        buf_puts(&t, "&backpressure=true");
    /* a 200 streams to stdout; an error answer is collected and shown */
    HttpReq rq = {"POST", buf_cstr(&t), NULL, NULL, 0, NULL, tail_out, NULL};
    HttpResp r;
    Err e = {0};
    rc = http_do(&u, &rq, &r, &e);
    buf_free(&t);
    return finish(rc, &e, &r, false);
}

static const char *human_bytes(double v, char *b, size_t n)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (v >= 1024 && u < 4)
        v /= 1024, u++;
    snprintf(b, n, u ? "%.1f %s" : "%.0f %s", v, units[u]);
    return b;
}

static double jnum(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

/* The first 10 operators of a /stats "operators" array, under a heading
   ending with what (the hosts they cover). */
static void print_top_operators(const cJSON *ops, const char *what)
{
    char a[32], b[32]; /* one each per printf */
    printf("%-5s %-10s %-24s %12s %12s %12s%s\n", "node", "kind", "relation", "rows", "memory",
           "disk", what);
    const cJSON *e;
    int shown = 0;
    cJSON_ArrayForEach(e, ops)
    {
        if (shown++ == 10)
            break;
        const cJSON *k = cJSON_GetObjectItemCaseSensitive(e, "kind");
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(e, "relation");
        printf("%-5.0f %-10s %-24s %12.0f %12s %12s\n", jnum(e, "node"),
               cJSON_IsString(k) ? k->valuestring : "?", cJSON_IsString(r) ? r->valuestring : "?",
               jnum(e, "rows"), human_bytes(jnum(e, "bytes_in_memory"), a, sizeof(a)),
               human_bytes(jnum(e, "bytes_on_disk"), b, sizeof(b)));
    }
}

/* The spill counters of a /stats memory object or one of its hosts[]. */
static void print_spill_counters(const cJSON *m, const char *indent)
{
    char a[32], b[32];
    printf("%sspilled runs %.0f (%.0f on disk, %.0f merged away), spill cache %s (%.0f hits, "
           "%.0f misses), held for a checkpoint %.0f files (%s)\n",
           indent, jnum(m, "spilled_runs"), jnum(m, "spilled_runs_on_disk"),
           jnum(m, "spilled_runs_merged"), human_bytes(jnum(m, "spill_cache_bytes"), a, sizeof(a)),
           jnum(m, "spill_cache_hits"), jnum(m, "spill_cache_misses"),
           jnum(m, "spill_files_held_for_checkpoint"),
           human_bytes(jnum(m, "spill_bytes_held_for_checkpoint"), b, sizeof(b)));
}

/* `sluice stats URL --format memory`: where the memory goes, the top
   consumers first (the "memory" object of /stats, docs/memory.md). */
static void print_memory(const cJSON *j)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "memory");
    char a[32], b[32], d[32], x[32], y[32]; /* one each per printf */
    if (!cJSON_IsObject(m)) {
        printf("no memory figures\n");
        return;
    }
    const cJSON *lim = cJSON_GetObjectItemCaseSensitive(m, "limit_bytes");
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(m, "limit_source");
    printf("memory limit %s (%s), resident %s, state %s in memory + %s on disk\n",
           cJSON_IsNumber(lim) ? human_bytes(lim->valuedouble, a, sizeof(a)) : "none",
           cJSON_IsString(src) ? src->valuestring : "?",
           human_bytes(jnum(m, "rss_bytes"), b, sizeof(b)),
           human_bytes(jnum(m, "state_bytes"), d, sizeof(d)),
           human_bytes(jnum(m, "state_on_disk_bytes"), x, sizeof(x)));
    printf("spill cache %s (%.0f hits, %.0f misses), step arenas %s, input queue %s, "
           "output queues %s, unaccounted %s\n",
           human_bytes(jnum(m, "spill_cache_bytes"), a, sizeof(a)), jnum(m, "spill_cache_hits"),
           jnum(m, "spill_cache_misses"), human_bytes(jnum(m, "step_arena_bytes"), b, sizeof(b)),
           human_bytes(jnum(m, "input_queue_bytes"), d, sizeof(d)),
           human_bytes(jnum(m, "output_queue_bytes"), x, sizeof(x)),
           human_bytes(jnum(m, "unaccounted_bytes"), y, sizeof(y)));
    print_spill_counters(m, "");
    const cJSON *pr = cJSON_GetObjectItemCaseSensitive(m, "pressure");
    if (cJSON_IsString(pr))
        printf("pressure: %s\n", pr->valuestring);
    print_top_operators(cJSON_GetObjectItemCaseSensitive(m, "operators"), "");
    const cJSON *e;
    /* scale-out: each host's figures, then the sums over the hosts */
    const cJSON *hs = cJSON_GetObjectItemCaseSensitive(m, "hosts");
    cJSON_ArrayForEach(e, hs)
    {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(e, "name");
        printf("host %.0f (%s): resident %s, state %s in memory + %s on disk, step arenas %s\n",
               jnum(e, "host"), cJSON_IsString(n) ? n->valuestring : "?",
               human_bytes(jnum(e, "rss_bytes"), a, sizeof(a)),
               human_bytes(jnum(e, "state_bytes"), b, sizeof(b)),
               human_bytes(jnum(e, "state_on_disk_bytes"), d, sizeof(d)),
               human_bytes(jnum(e, "step_arena_bytes"), x, sizeof(x)));
        print_spill_counters(e, "  ");
    }
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(m, "totals");
    if (!cJSON_IsObject(t))
        return;
    printf("all hosts: resident %s, state %s in memory + %s on disk\n",
           human_bytes(jnum(t, "rss_bytes"), a, sizeof(a)),
           human_bytes(jnum(t, "state_bytes"), b, sizeof(b)),
           human_bytes(jnum(t, "state_on_disk_bytes"), d, sizeof(d)));
    print_top_operators(cJSON_GetObjectItemCaseSensitive(t, "operators"), " (all hosts)");
}

static int cmd_stats(int argc, char **argv)
{
    client_opts(&argc, argv);
    const char *fmt = opt(&argc, argv, "--format", true);
    int rc = no_more_options(argc, argv, 1);
    HttpUrl u;
    if (rc || (rc = client_url(argv[0], &u)))
        return rc;
    bool prom = fmt && !strcmp(fmt, "prometheus");
    bool memory = fmt && !strcmp(fmt, "memory");
    if (fmt && !prom && !memory && strcmp(fmt, "json")) {
        fprintf(stderr, "sluice: stats --format takes json, prometheus or memory\n");
        return 2;
    }
    HttpReq rq = {"GET", prom ? "/metrics" : "/stats", NULL, NULL, 0, NULL, NULL, NULL};
    HttpResp r;
    Err e = {0};
    rc = http_do(&u, &rq, &r, &e);
    if (!rc && r.status == 200 && !prom) {
        char *text = sl_strndup((const char *)r.body.p, r.body.n);
        cJSON *j = cJSON_Parse(text);
        char *pretty = j && !memory ? cJSON_Print(j) : NULL;
        if (j && memory) {
            print_memory(j);
            buf_reset(&r.body);
        }
        if (pretty) {
            printf("%s\n", pretty);
            free(pretty);
            buf_reset(&r.body);
        }
        cJSON_Delete(j);
        sl_free(text);
    }
    return finish(rc, &e, &r, true);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "run"))
        return cmd_run(argc - 2, argv + 2);
    if (!strcmp(argv[1], "check"))
        return cmd_check(argc - 2, argv + 2);
    if (!strcmp(argv[1], "diff"))
        return cmd_diff(argc - 2, argv + 2);
    if (!strcmp(argv[1], "lineage"))
        return cmd_lineage(argc - 2, argv + 2);
    if (!strcmp(argv[1], "query"))
        return cmd_query(argc - 2, argv + 2);
    if (!strcmp(argv[1], "push"))
        return cmd_push(argc - 2, argv + 2);
    if (!strcmp(argv[1], "tail"))
        return cmd_tail(argc - 2, argv + 2);
    if (!strcmp(argv[1], "stats"))
        return cmd_stats(argc - 2, argv + 2);
    if (!strcmp(argv[1], "serve"))
        return cmd_serve(argc - 2, argv + 2);
    if (mgr_client_verb(argv[1]))
        return cmd_mgr_client(argv[1], argc - 2, argv + 2);
    if (!strcmp(argv[1], "--version")) {
        printf("sluice %s\n", SLUICE_VERSION);
        return 0;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "sluice: unknown command \"%s\"\n", argv[1]);
    usage(stderr);
    return 2;
}
