/*
 * c_s1: scenario S1 (the vendor's published C producer benchmark) and S1-R (S1 with access logs
 * varied as real ones are) driven through the official SLS C producer (aliyun/aliyun-log-c-sdk,
 * static library), for lab/vs-c/side_by_side.sh.
 *
 * usage: c_s1 ENDPOINT PROJECT LOGSTORE ACCESS_KEY_ID ACCESS_KEY_SECRET RATE SECONDS [MODE]
 *   ENDPOINT  host[:port] without scheme; the producer posts to http://{PROJECT}.{ENDPOINT}
 *   RATE      add_log calls per second (N); each iteration makes two calls, so N/2 iterations
 *   SECONDS   throttled: number of one-second bursts; unthrottled: wall-clock load seconds
 *   MODE      "throttled" (default) or "unthrottled" (add as fast as possible for SECONDS)
 * optional environment:
 *   C_S1_COMPRESS=lz4|zstd|none   (default lz4, the library default; zstd needs the library
 *                                  built with -DFEATURE_ZSTD_COMPRESS=ON)
 *   C_S1_AUTH=v1|v4               (default v1, the library default)   C_S1_REGION (v4, default cn-hangzhou)
 *   C_S1_DESTROY_WAIT=SEC         (flusher and sender waits at destroy, default 120; library 1+1)
 *   C_S1_SEND_THREADS=N           (default 16, as the vendor)
 *   C_S1_QUIET=1                  (do not print the per-second lines)
 *   C_S1_POOL=FILE                S1-R: the records of the pool written by the Rust harness
 *                                 (`examples/s1 --s1r-pool-out FILE`: a record a line, fields
 *                                 `key=value` separated by tabs); each add sends record
 *                                 n % lines with its request_id's first 12 hex digits set to n,
 *                                 as every loghose harness does. One add an iteration.
 *
 * Vendor configuration: 64 MB buffer; packet closes at 4 MB, 4096 logs or 3000 ms; 16 send
 * threads; topic test_topic; tags tag_1..tag_5 = val_1..val_5.
 *
 * S1: one iteration = two add_log calls with the vendor's exact strings; "index" holds the running
 * iteration number. Throttled: each second runs N/2 iterations as one burst, then sleeps to the
 * burst's second boundary, as the vendor's usleep(1e6 - burst) does (if a burst overruns, the next
 * starts at once, so the run stretches and the achieved rate falls). Only the bursts are timed
 * (sprintf of the index included, as in the vendor's loop).
 *
 * Output: key=value lines (read by side_by_side.sh), e.g. avg_us_per_add, cpu_pct, maxrss_kb,
 * accepted, rejected, cb_ok, cb_fail, cb_raw_bytes, cb_comp_bytes, destroy_s.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "log_api.h"
#include "log_producer_client.h"
#include "log_producer_config.h"

static atomic_ullong cb_ok, cb_fail, cb_raw_bytes, cb_comp_bytes, cb_ok_raw, cb_ok_comp;
static atomic_ullong cb_by_result[16];
static pthread_mutex_t err_mu = PTHREAD_MUTEX_INITIALIZER;
static int errors_printed;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double wall_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu_s(struct rusage *ru) {
    return ru->ru_utime.tv_sec + ru->ru_utime.tv_usec / 1e6 + ru->ru_stime.tv_sec +
           ru->ru_stime.tv_usec / 1e6;
}

static void on_send_done(const char *config_name, log_producer_result result, size_t log_bytes,
                         size_t compressed_bytes, const char *req_id, const char *message,
                         const unsigned char *raw_buffer) {
    (void)config_name;
    (void)raw_buffer;
    cb_raw_bytes += log_bytes;
    cb_comp_bytes += compressed_bytes;
    if (result >= 0 && result < 16) cb_by_result[result]++;
    if (result == LOG_PRODUCER_OK) {
        cb_ok++;
        cb_ok_raw += log_bytes;
        cb_ok_comp += compressed_bytes;
        return;
    }
    cb_fail++;
    pthread_mutex_lock(&err_mu);
    if (errors_printed < 10) {
        errors_printed++;
        fprintf(stderr, "send_done error: result=%d raw=%zu comp=%zu req_id=[%s] message=[%s]\n",
                result, log_bytes, compressed_bytes, req_id ? req_id : "(null)",
                message ? message : "(null)");
    }
    pthread_mutex_unlock(&err_mu);
}

/* S1-R: the pool's records, their fields as arrays for add_log_with_len */
typedef struct {
    int n;
    char **keys, **values;
    size_t *key_lens, *value_lens;
    int request_id; /* the field whose first 12 characters carry the log's number */
} pool_record;
static pool_record *pool;
static long pool_size;

static int load_pool(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    long cap = 4096;
    pool = calloc(cap, sizeof *pool);
    char *line = NULL;
    size_t len = 0;
    ssize_t got;
    while ((got = getline(&line, &len, f)) > 0) {
        if (line[got - 1] == '\n') line[--got] = 0;
        if (got == 0) continue;
        if (pool_size == cap) pool = realloc(pool, (cap *= 2) * sizeof *pool);
        pool_record *r = &pool[pool_size++];
        int fields = 1;
        for (char *c = line; *c; c++) fields += *c == '\t';
        r->keys = calloc(fields, sizeof(char *));
        r->values = calloc(fields, sizeof(char *));
        r->key_lens = calloc(fields, sizeof(size_t));
        r->value_lens = calloc(fields, sizeof(size_t));
        r->request_id = -1;
        char *save = NULL;
        for (char *tok = strtok_r(line, "\t", &save); tok; tok = strtok_r(NULL, "\t", &save)) {
            char *eq = strchr(tok, '=');
            if (!eq) continue;
            *eq = 0;
            r->keys[r->n] = strdup(tok);
            r->values[r->n] = strdup(eq + 1);
            r->key_lens[r->n] = strlen(tok);
            r->value_lens[r->n] = strlen(eq + 1);
            if (strcmp(tok, "request_id") == 0 && r->value_lens[r->n] >= 12) r->request_id = r->n;
            r->n++;
        }
        if (r->request_id < 0) {
            fprintf(stderr, "pool line %ld has no request_id of 12 characters or more\n", pool_size);
            return -1;
        }
    }
    free(line);
    fclose(f);
    return pool_size > 0 ? 0 : -1;
}

/* S1-R: log idx, one add_log call; returns 1 when it was rejected */
static inline int one_real_log(log_producer_client *client, long long idx) {
    pool_record *r = &pool[idx % pool_size];
    char *id = r->values[r->request_id];
    char head[17];
    snprintf(head, sizeof head, "%012llx", (unsigned long long)idx & 0xFFFFFFFFFFFFULL);
    memcpy(id, head, 12); /* one thread adds: the pool's copy is this add's */
    return log_producer_client_add_log_with_len(client, r->n, r->keys, r->key_lens, r->values,
                                                r->value_lens) != LOG_PRODUCER_OK;
}

static const char *env_or(const char *name, const char *dflt) {
    const char *v = getenv(name);
    return (v && *v) ? v : dflt;
}

/* S1: the vendor's two logs; returns the number of add_log calls rejected (0..2) */
static inline int one_iteration(log_producer_client *client, long long idx) {
    char indexStr[32];
    int rej = 0;
    sprintf(indexStr, "%lld", idx);
    log_producer_result r1 = log_producer_client_add_log(
        client, 20, "content_key_1",
        "1abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+",
        "content_key_2", "2abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+",
        "content_key_3", "3abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+",
        "content_key_4", "4abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+",
        "content_key_5", "5abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+",
        "content_key_6", "6abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+",
        "content_key_7", "7abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+",
        "content_key_8", "8abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+",
        "content_key_9", "9abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*()_+",
        "index", indexStr);
    if (r1 != LOG_PRODUCER_OK) rej++;
    log_producer_result r2 = log_producer_client_add_log(
        client, 8, "LogHub", "Real-time log collection and consumption",
        "Search/Analytics", "Query and real-time analysis",
        "Visualized", "dashboard and report functions",
        "Interconnection", "Grafana and JDBC/SQL92");
    if (r2 != LOG_PRODUCER_OK) rej++;
    return rej;
}

int main(int argc, char **argv) {
    if (argc < 8) {
        fprintf(stderr,
                "usage: %s ENDPOINT PROJECT LOGSTORE ACCESS_KEY_ID ACCESS_KEY_SECRET RATE SECONDS "
                "[throttled|unthrottled]\n",
                argv[0]);
        return 2;
    }
    const char *endpoint = argv[1], *project = argv[2], *logstore = argv[3];
    const char *ak_id = argv[4], *ak_secret = argv[5];
    long rate = atol(argv[6]);
    int seconds = atoi(argv[7]);
    int unthrottled = argc > 8 && strcmp(argv[8], "unthrottled") == 0;
    if (argc > 8 && !unthrottled && strcmp(argv[8], "throttled") != 0) {
        fprintf(stderr, "MODE must be throttled or unthrottled\n");
        return 2;
    }
    /* accept a scheme in ENDPOINT for convenience; the library wants host[:port] */
    if (strncmp(endpoint, "http://", 7) == 0) endpoint += 7;
    const char *compress = env_or("C_S1_COMPRESS", "lz4");
    const char *auth = env_or("C_S1_AUTH", "v1");
    const char *region = env_or("C_S1_REGION", "cn-hangzhou");
    int destroy_wait = atoi(env_or("C_S1_DESTROY_WAIT", "120"));
    int send_threads = atoi(env_or("C_S1_SEND_THREADS", "16"));
    int quiet = atoi(env_or("C_S1_QUIET", "0"));
    const char *pool_path = env_or("C_S1_POOL", "");
    if (*pool_path && load_pool(pool_path) != 0) {
        fprintf(stderr, "cannot read the S1-R pool %s\n", pool_path);
        return 2;
    }
    /* an iteration's add_log calls: S1's two logs, or one S1-R log */
    int per_iteration = pool_size ? 1 : 2;
    long iters_per_sec = rate / per_iteration;
    if (!unthrottled && iters_per_sec <= 0) {
        fprintf(stderr, "RATE must be >= 2\n");
        return 2;
    }

    if (log_producer_env_init(LOG_GLOBAL_ALL) != LOG_PRODUCER_OK) {
        fprintf(stderr, "log_producer_env_init failed\n");
        return 1;
    }
    log_producer_config *config = create_log_producer_config();
    log_producer_config_set_endpoint(config, endpoint);
    log_producer_config_set_project(config, project);
    log_producer_config_set_logstore(config, logstore);
    log_producer_config_set_access_id(config, ak_id);
    log_producer_config_set_access_key(config, ak_secret);
    log_producer_config_set_topic(config, "test_topic");
    log_producer_config_add_tag(config, "tag_1", "val_1");
    log_producer_config_add_tag(config, "tag_2", "val_2");
    log_producer_config_add_tag(config, "tag_3", "val_3");
    log_producer_config_add_tag(config, "tag_4", "val_4");
    log_producer_config_add_tag(config, "tag_5", "val_5");
    log_producer_config_set_packet_log_bytes(config, 4 * 1024 * 1024);
    log_producer_config_set_packet_log_count(config, 4096);
    log_producer_config_set_packet_timeout(config, 3000);
    log_producer_config_set_max_buffer_limit(config, 64 * 1024 * 1024);
    log_producer_config_set_send_thread_count(config, send_threads);
    log_producer_config_set_destroy_flusher_wait_sec(config, destroy_wait);
    log_producer_config_set_destroy_sender_wait_sec(config, destroy_wait);
    int ctype = 1;
    if (strcmp(compress, "none") == 0) ctype = 0;
    else if (strcmp(compress, "zstd") == 0) ctype = 2;
    else if (strcmp(compress, "lz4") != 0) {
        fprintf(stderr, "C_S1_COMPRESS must be lz4, zstd or none\n");
        return 2;
    }
    log_producer_config_set_compress_type(config, ctype);
    if (strcmp(auth, "v4") == 0) {
        log_producer_config_set_auth_version(config, AUTH_VERSION_4);
        log_producer_config_set_region(config, region);
    }

    log_producer *producer = create_log_producer(config, on_send_done);
    if (producer == NULL) {
        fprintf(stderr, "create_log_producer failed\n");
        return 1;
    }
    log_producer_client *client = get_log_producer_client(producer, NULL);
    if (client == NULL) {
        fprintf(stderr, "get_log_producer_client failed\n");
        return 1;
    }
    printf("config endpoint=%s project=%s logstore=%s rate=%ld seconds=%d mode=%s compress=%s "
           "auth=%s send_threads=%d destroy_wait=%d workload=%s\n",
           endpoint, project, logstore, rate, seconds, unthrottled ? "unthrottled" : "throttled",
           compress, auth, send_threads, destroy_wait, pool_size ? "s1r" : "s1");
    fflush(stdout);

    struct rusage ru0, ru1, ru2;
    unsigned long long accepted = 0, rejected = 0, overruns = 0;
    long long idx = 0;
    double burst_total = 0.0;
    getrusage(RUSAGE_SELF, &ru0);
    double t0 = now_s();
    printf("load_start_epoch_ms=%.0f\n", wall_s() * 1000.0);

    if (!unthrottled) {
        for (int s = 0; s < seconds; ++s) {
            double b0 = now_s();
            unsigned long long rej = 0;
            for (long j = 0; j < iters_per_sec; ++j)
                rej += pool_size ? one_real_log(client, idx++) : one_iteration(client, idx++);
            double b1 = now_s();
            double dt = b1 - b0;
            burst_total += dt;
            rejected += rej;
            accepted += per_iteration * (unsigned long long)iters_per_sec - rej;
            if (!quiet)
                printf("second=%d burst_s=%.6f us_per_add=%.4f rejected=%llu\n", s, dt,
                       dt * 1e6 / ((double)per_iteration * iters_per_sec), rej);
            /* as the vendor: sleep out the rest of this burst's second; overrun: start at once */
            double next = b0 + 1.0;
            double left = next - now_s();
            if (left > 0) {
                struct timespec ts = {(time_t)left, (long)((left - (time_t)left) * 1e9)};
                while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
                }
            } else {
                overruns++;
            }
        }
    } else {
        double end = t0 + seconds;
        for (;;) {
            /* check the clock every 256 iterations */
            for (int k = 0; k < 256; ++k) {
                int rej = pool_size ? one_real_log(client, idx++) : one_iteration(client, idx++);
                rejected += rej;
                accepted += per_iteration - rej;
            }
            if (now_s() >= end) break;
        }
        burst_total = now_s() - t0;
    }
    double t1 = now_s();
    getrusage(RUSAGE_SELF, &ru1);
    printf("load_end_epoch_ms=%.0f\n", wall_s() * 1000.0);
    double load_s = t1 - t0;
    double load_cpu = cpu_s(&ru1) - cpu_s(&ru0);
    unsigned long long calls = accepted + rejected;

    double d0 = now_s();
    destroy_log_producer(producer);
    double d1 = now_s();
    getrusage(RUSAGE_SELF, &ru2);
    log_producer_env_destroy();

    printf("iterations=%lld add_calls=%llu accepted=%llu rejected=%llu overruns=%llu\n", idx, calls,
           accepted, rejected, overruns);
    printf("load_s=%.3f burst_s=%.3f avg_us_per_add=%.4f achieved_add_per_s=%.1f\n", load_s,
           burst_total, calls ? burst_total * 1e6 / calls : 0.0, calls / load_s);
    printf("cpu_user_s=%.3f cpu_sys_s=%.3f cpu_s=%.3f cpu_pct=%.2f\n",
           (ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec) +
               (ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec) / 1e6,
           (ru1.ru_stime.tv_sec - ru0.ru_stime.tv_sec) +
               (ru1.ru_stime.tv_usec - ru0.ru_stime.tv_usec) / 1e6,
           load_cpu, 100.0 * load_cpu / load_s);
    printf("maxrss_kb=%ld maxrss_mb=%.2f vcsw=%ld ivcsw=%ld\n", ru2.ru_maxrss, ru2.ru_maxrss / 1024.0,
           ru1.ru_nvcsw - ru0.ru_nvcsw, ru1.ru_nivcsw - ru0.ru_nivcsw);
    printf("destroy_s=%.3f cpu_total_s=%.3f\n", d1 - d0, cpu_s(&ru2));
    printf("cb_ok=%llu cb_fail=%llu cb_raw_bytes=%llu cb_comp_bytes=%llu cb_ok_raw_bytes=%llu "
           "cb_ok_comp_bytes=%llu\n",
           (unsigned long long)cb_ok, (unsigned long long)cb_fail,
           (unsigned long long)cb_raw_bytes, (unsigned long long)cb_comp_bytes,
           (unsigned long long)cb_ok_raw, (unsigned long long)cb_ok_comp);
    printf("cb_by_result");
    for (int r = 0; r < 16; ++r)
        if (cb_by_result[r]) printf(" r%d=%llu", r, (unsigned long long)cb_by_result[r]);
    printf("\n");
    return 0;
}
