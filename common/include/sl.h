/*
 * sl.h -- shared primitives of sluice: status codes, allocation, byte
 * buffers, logging, clocks, encodings and randomness.
 *
 * Every module may include this header; it includes nothing of another
 * module and no third-party header.
 *
 * Conventions (binding for the whole tree, see docs/design.md):
 *  - Functions that can fail return int: SL_OK (0) or a negative SL_E* code;
 *    bool only for pure predicates. A function that takes ownership of an
 *    argument on some path says so on its declaration ("Always takes
 *    ownership of X." or "On failure takes ownership of X.").
 *  - sl_x*alloc() never return NULL: they abort on exhaustion and are for
 *    control-plane objects whose size sluice chooses. Client-sized data goes
 *    through sl_try*alloc(), which may return NULL, after a bound check.
 *  - struct sl_slice borrows bytes; struct sl_buf owns them.
 *
 * Threading: everything here is safe to call from any thread.
 */
#ifndef SLUICE_SL_H
#define SLUICE_SL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- status codes ------------------------------------------------------ */

enum sl_status {
    SL_OK = 0,
    SL_ENOMEM = -1,    /* allocation failed (only from sl_try* paths) */
    SL_EINVAL = -2,    /* malformed or out-of-range input */
    SL_EBUSY = -4,     /* full or throttled */
    SL_ECLOSED = -5,   /* shutting down / already closed */
    SL_EIO = -6,       /* storage or socket I/O failed */
    SL_ENOTFOUND = -7, /* no such object */
    SL_EEXIST = -8,    /* already exists (with different properties) */
    SL_ETOOBIG = -9,   /* over a size limit */
    SL_ELIMIT = -10,   /* a per-tenant cap refused it (throttled; retry later) */
    SL_EUNAVAIL = -11, /* not served here now (no leader, no quorum): retry later */
    SL_EBUDGET = -12,  /* a memory budget is spent: refused until it frees (retry later) */
};

/* Static, human-readable text for an SL_* code (never NULL). */
const char *sl_strerror(int status);

/* ---- assertions -------------------------------------------------------- */

/* Always on: cheap invariants whose failure means memory is already wrong. */
#define SL_ASSERT(e) ((e) ? (void)0 : sl_assert_fail(#e, __FILE__, __LINE__))
_Noreturn void sl_assert_fail(const char *expr, const char *file, int line);

#define SL_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define SL_MIN(a, b) ((a) < (b) ? (a) : (b))
#define SL_MAX(a, b) ((a) > (b) ? (a) : (b))

/* ---- allocation -------------------------------------------------------- */

void *sl_xmalloc(size_t n);
void *sl_xcalloc(size_t count, size_t size);
void *sl_xrealloc(void *p, size_t n);
char *sl_xstrdup(const char *s);
char *sl_xstrndup(const char *s, size_t n);
void *sl_trymalloc(size_t n);

/* ---- borrowed and owned bytes ------------------------------------------ */

struct sl_slice {
    const char *p;
    size_t n;
};

#define SL_SLICE_LIT(s) ((struct sl_slice){(s), sizeof(s) - 1})
struct sl_slice sl_slice_cstr(const char *s);
bool sl_slice_eq(struct sl_slice a, struct sl_slice b);
bool sl_slice_eq_cstr(struct sl_slice a, const char *s);

/* A growable, owned byte buffer. Always NUL-terminated when p != NULL so
 * it can be handed to APIs that want C strings; n excludes the NUL. */
struct sl_buf {
    char *p;
    size_t n;
    size_t cap;
};

void sl_buf_init(struct sl_buf *b);
void sl_buf_free(struct sl_buf *b);
void sl_buf_reset(struct sl_buf *b); /* n = 0, keeps capacity */
void sl_buf_reserve(struct sl_buf *b, size_t extra);
void sl_buf_append(struct sl_buf *b, const void *data, size_t n);
void sl_buf_append_cstr(struct sl_buf *b, const char *s);
void sl_buf_append_byte(struct sl_buf *b, char c);
void sl_buf_printf(struct sl_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sl_buf_vprintf(struct sl_buf *b, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
/* Transfers the bytes to the caller (free() them); b is left empty. */
char *sl_buf_take(struct sl_buf *b, size_t *len_out);

/* ---- logging ----------------------------------------------------------- */

enum sl_log_level { SL_LOG_DEBUG, SL_LOG_INFO, SL_LOG_WARN, SL_LOG_ERROR };

/* Logs one line to stderr: "2026-11-21T07:09:00.123Z LEVEL [module] text". */
void sl_log(enum sl_log_level level, const char *module, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void sl_log_set_level(enum sl_log_level level);
bool sl_log_enabled(enum sl_log_level level);

/* Copies in[0..n) into out (cap > 0, always NUL-terminated) escaped for a
 * log line: backslash, double quote and control bytes become \\, \",
 * \n, \r, \t or \xNN, so a value a client chose (a path, a JSON string)
 * can neither end the quotes around it nor start a forged line. Cuts
 * before the escape that would not fit. 4 * n + 1 bytes always suffice. */
void sl_log_escape(const char *in, size_t n, char *out, size_t cap);

/* A budget of lines for one message that a client can trigger at will
 * (accept errors, refused connections, malformed input), so that a flood
 * cannot fill the disk through the log: at most burst lines per
 * interval_ms, shared by every thread; the lines over it are counted and
 * the next line that passes says how many were suppressed. Declare one per
 * call site, statically: SL_LOG_LIMIT(10, 1000). */
struct sl_log_limit {
    uint32_t burst;
    uint32_t interval_ms;
    _Atomic uint64_t window_start_ms;
    _Atomic uint32_t used;
    _Atomic uint64_t suppressed;
};
#define SL_LOG_LIMIT(burst, interval_ms)                                                           \
    {                                                                                              \
        (burst), (interval_ms), 0, 0, 0                                                            \
    }
void sl_log_limited(struct sl_log_limit *lim, enum sl_log_level level, const char *module,
                    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Per-thread buffering for event-loop threads, whose per-request lines
 * would otherwise cost a write(2) each (as nginx's "access_log buffer=").
 * After sl_log_buffer_start() the calling thread's DEBUG and INFO lines
 * collect in a thread-local buffer, written whole lines at a time when it
 * fills or at sl_log_flush(); a WARN or ERROR line first writes what is
 * buffered, then itself, so the order on stderr is kept and problems are
 * never delayed. The loop must call sl_log_flush() before it blocks (from
 * a uv_prepare handle). sl_log_buffer_stop() flushes and returns the
 * thread to one write per line. */
void sl_log_buffer_start(void);
void sl_log_flush(void);
void sl_log_buffer_stop(void);

/* ---- files ------------------------------------------------------------- */

/* Opens path read-only and fsyncs it: a file whose bytes must be on disk,
 * or a directory whose entries (a rename, a new file) must be. Returns
 * SL_OK, or SL_EIO when it cannot be opened or synced (errno says why). */
int sl_fsync_path(const char *path);

/* Creates path, which must not exist yet (O_EXCL), mode 0600, never
 * through a symlink (O_NOFOLLOW), and sets *fd to it open for writing: a
 * file in a directory that may hold names someone else planted. Returns
 * SL_OK, or SL_EIO (errno says why: EEXIST, ELOOP, ...). */
int sl_file_create(const char *path, int *fd);

/* ---- clocks ------------------------------------------------------------ */

/* Wall-clock time (CLOCK_REALTIME) in milliseconds / microseconds since the
 * epoch: what message timestamps and SigV4 compare against. */
uint64_t sl_wall_ms(void);
uint64_t sl_wall_us(void);
/* Monotonic time in nanoseconds: for durations and timers. */
uint64_t sl_mono_ns(void);

/* Formats t (seconds since the epoch) per RFC 7231 IMF-fixdate into out
 * (at least 30 bytes). Returns the length written. */
size_t sl_http_date(int64_t t, char *out, size_t cap);

/* ---- encodings --------------------------------------------------------- */

/* Lower-case hex of n bytes into out (2n + 1 bytes incl. NUL). */
void sl_hex_encode(const uint8_t *in, size_t n, char *out);
/* The value of one hex digit (either case), or -1. */
static inline int sl_hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}
/* Standard base64 with padding. Encoded size is sl_base64_encoded_len(n)
 * plus a NUL. Decode returns SL_OK or SL_EINVAL for bad input; *out_len
 * gets the decoded length; out needs at least 3 * (n / 4) bytes. */
size_t sl_base64_encoded_len(size_t n);
void sl_base64_encode(const uint8_t *in, size_t n, char *out);
int sl_base64_decode(const char *in, size_t n, uint8_t *out, size_t *out_len);
/* URL-safe base64 without padding (receipt handles, tokens). */
void sl_base64url_encode(const uint8_t *in, size_t n, char *out);
int sl_base64url_decode(const char *in, size_t n, uint8_t *out, size_t *out_len);

/* ---- randomness and identifiers ---------------------------------------- */

/* Cryptographically strong random bytes (OpenSSL RAND_bytes); aborts if
 * the generator is unavailable, which only happens on a broken system. */
void sl_random_bytes(void *out, size_t n);
/* A random RFC 4122 version-4 UUID, lower-case with dashes, into out[37];
 * its 122 random bits come from RAND_bytes, drawn ahead in a per-thread pool. */
void sl_uuid4(char out[37]);
/* The same made from 16 random bytes the caller drew (one sl_random_bytes
 * call for many ids: each RAND_bytes call costs far more than its bytes). */
void sl_uuid4_from(const uint8_t random[16], char out[37]);

/* ---- build identity and the service manager ----------------------------- */

/* The release sluice was built as ("0.3.0") and the git commit it was built
 * from (12 hex digits, "-dirty" when the tree had uncommitted changes,
 * "unknown" outside a git checkout). Stamped at every build by
 * common/version.cmake, so a binary never reports a stale commit. */
const char *sl_version(void);
const char *sl_build_commit(void);

/* Tells the service manager about the process (sd_notify(3): "READY=1",
 * "STOPPING=1", "STATUS=..."), formatted as printf. Best-effort by design:
 * without systemd (no NOTIFY_SOCKET) it does nothing, and a failure to
 * notify must never stop the gateway, so there is nothing to return. */
void sl_notify(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
