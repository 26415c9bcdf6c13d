/*
 * sl_log.c -- one-line structured logging to stderr, and the clocks.
 *
 * A whole line is formatted first and written with one write(2), so lines
 * from several threads never interleave. Event-loop threads may buffer
 * their lines (sl_log_buffer_start): a write then carries many whole lines,
 * still never part of one.
 */
#include "sl.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum {
    LOG_LINE_MAX = 2048,
    LOG_BUFFER_SIZE = 32768, /* a few hundred request lines */
};

static atomic_int log_level = SL_LOG_INFO;

static const char *const level_names[] = {"DEBUG", "INFO", "WARN", "ERROR"};

/* Per thread: the buffer (when buffering) and the formatted second of the
 * last line, since a loop logs thousands of lines in the same second. */
struct log_thread {
    char *buf; /* NULL: not buffering */
    size_t used;
    time_t stamp_sec;
    char stamp[24]; /* "2026-11-21T07:09:00." */
    size_t stamp_len;
};

static _Thread_local struct log_thread log_thread;

void sl_log_set_level(enum sl_log_level level)
{
    atomic_store(&log_level, (int)level);
}

bool sl_log_enabled(enum sl_log_level level)
{
    return (int)level >= atomic_load_explicit(&log_level, memory_order_relaxed);
}

static void write_all(const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(STDERR_FILENO, p, n);
        if (w <= 0) {
            return; /* nowhere to report a failing stderr */
        }
        p += w;
        n -= (size_t)w;
    }
}

void sl_log_escape(const char *in, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)in[i];
        char esc[5] = {'\\', (char)c, 0, 0, 0};
        size_t k = 2;
        if (c == '\n' || c == '\r' || c == '\t') {
            esc[1] = (char)(c == '\n' ? 'n' : c == '\r' ? 'r' : 't');
        } else if (c < 0x20 || c == 0x7f) {
            snprintf(esc, sizeof esc, "\\x%02x", c);
            k = 4;
        } else if (c != '"' && c != '\\') {
            esc[0] = (char)c;
            k = 1;
        }
        if (o + k >= cap) {
            break;
        }
        memcpy(out + o, esc, k);
        o += k;
    }
    out[o] = '\0';
}

void sl_log_flush(void)
{
    struct log_thread *lt = &log_thread;
    if (lt->used > 0) {
        write_all(lt->buf, lt->used);
        lt->used = 0;
    }
}

void sl_log_buffer_start(void)
{
    if (log_thread.buf == NULL) {
        log_thread.buf = sl_xmalloc(LOG_BUFFER_SIZE);
        log_thread.used = 0;
    }
}

void sl_log_buffer_stop(void)
{
    sl_log_flush();
    free(log_thread.buf);
    log_thread.buf = NULL;
}

/* Writes "YYYY-MM-DDTHH:MM:SS.mmmZ " into out (at least 32 bytes). */
static size_t format_stamp(struct log_thread *lt, char *out)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (lt->stamp_len == 0 || ts.tv_sec != lt->stamp_sec) {
        struct tm tm;
        gmtime_r(&ts.tv_sec, &tm);
        int n = snprintf(lt->stamp, sizeof lt->stamp, "%04d-%02d-%02dT%02d:%02d:%02d.",
                         tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                         tm.tm_sec);
        lt->stamp_len = n > 0 ? SL_MIN((size_t)n, sizeof lt->stamp - 1) : 0;
        lt->stamp_sec = ts.tv_sec;
    }
    memcpy(out, lt->stamp, lt->stamp_len);
    unsigned ms = (unsigned)(ts.tv_nsec / 1000000);
    char *p = out + lt->stamp_len;
    *p++ = (char)('0' + ms / 100);
    *p++ = (char)('0' + ms / 10 % 10);
    *p++ = (char)('0' + ms % 10);
    *p++ = 'Z';
    *p++ = ' ';
    return (size_t)(p - out);
}

/* Formats and emits one line; suffix (may be NULL) is appended after the
 * formatted text. */
__attribute__((format(printf, 4, 0))) static void log_line(enum sl_log_level level,
                                                           const char *module, const char *suffix,
                                                           const char *fmt, va_list ap)
{
    struct log_thread *lt = &log_thread;
    char line[LOG_LINE_MAX];
    size_t n = format_stamp(lt, line);
    int h = snprintf(line + n, sizeof line - n, "%s [%s] ", level_names[level], module);
    if (h < 0) {
        return;
    }
    n += SL_MIN((size_t)h, sizeof line - n - 1);
    int m = vsnprintf(line + n, sizeof line - n - 1, fmt, ap);
    size_t len = n + (m < 0 ? 0 : SL_MIN((size_t)m, sizeof line - n - 2));
    if (suffix != NULL) {
        int k = snprintf(line + len, sizeof line - len - 1, "%s", suffix);
        len += k < 0 ? 0 : SL_MIN((size_t)k, sizeof line - len - 2);
    }
    line[len++] = '\n';
    if (lt->buf == NULL) {
        write_all(line, len);
        return;
    }
    if (level >= SL_LOG_WARN || lt->used + len > LOG_BUFFER_SIZE) {
        sl_log_flush();
    }
    if (level >= SL_LOG_WARN) {
        write_all(line, len);
        return;
    }
    memcpy(lt->buf + lt->used, line, len);
    lt->used += len;
}

void sl_log(enum sl_log_level level, const char *module, const char *fmt, ...)
{
    if (!sl_log_enabled(level)) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    log_line(level, module, NULL, fmt, ap);
    va_end(ap);
}

/* The window is reset by whichever thread first sees it expired; a line
 * racing with the reset may be counted in either window, which only moves
 * the budget by one line. */
void sl_log_limited(struct sl_log_limit *lim, enum sl_log_level level, const char *module,
                    const char *fmt, ...)
{
    if (!sl_log_enabled(level)) {
        return;
    }
    uint64_t now_ms = sl_mono_ns() / 1000000u;
    uint64_t start = atomic_load_explicit(&lim->window_start_ms, memory_order_relaxed);
    if (now_ms - start >= lim->interval_ms &&
        atomic_compare_exchange_strong(&lim->window_start_ms, &start, now_ms)) {
        atomic_store_explicit(&lim->used, 0, memory_order_relaxed);
    }
    if (atomic_fetch_add_explicit(&lim->used, 1, memory_order_relaxed) >= lim->burst) {
        atomic_fetch_add_explicit(&lim->suppressed, 1, memory_order_relaxed);
        return;
    }
    uint64_t skipped = atomic_exchange_explicit(&lim->suppressed, 0, memory_order_relaxed);
    char suffix[64];
    if (skipped > 0) {
        snprintf(suffix, sizeof suffix, " (%llu similar lines suppressed)",
                 (unsigned long long)skipped);
    }
    va_list ap;
    va_start(ap, fmt);
    log_line(level, module, skipped > 0 ? suffix : NULL, fmt, ap);
    va_end(ap);
}

uint64_t sl_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t sl_wall_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

uint64_t sl_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

size_t sl_http_date(int64_t t, char *out, size_t cap)
{
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    size_t n = strftime(out, cap, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    return n;
}
