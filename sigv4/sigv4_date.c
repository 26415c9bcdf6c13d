/*
 * sigv4_date.c -- the x-amz-date form of a time: parsed strictly (the
 * verifier refuses anything else) and formatted for signers.
 *
 * Threading: pure functions (gmtime_r, timegm).
 */
#include "sigv4_date.h"

#include <time.h>

#include "sigv4.h"
#include "sigv4_text.h"

bool sigv4__parse_amz_date(struct sl_slice s, int64_t *out)
{
    int y, mo, d, h, mi, sec;
    if (s.n != 16 || s.p[8] != 'T' || s.p[15] != 'Z' || !tx_parse_digits(s.p, 4, &y) ||
        !tx_parse_digits(s.p + 4, 2, &mo) || !tx_parse_digits(s.p + 6, 2, &d) ||
        !tx_parse_digits(s.p + 9, 2, &h) || !tx_parse_digits(s.p + 11, 2, &mi) ||
        !tx_parse_digits(s.p + 13, 2, &sec)) {
        return false;
    }
    if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 59) {
        return false;
    }
    struct tm tm = {.tm_year = y - 1900,
                    .tm_mon = mo - 1,
                    .tm_mday = d,
                    .tm_hour = h,
                    .tm_min = mi,
                    .tm_sec = sec};
    time_t t = timegm(&tm);
    struct tm back;
    /* timegm normalises 31 April to 1 May: a round trip catches it. */
    if (t == (time_t)-1 || !gmtime_r(&t, &back) || back.tm_mday != d || back.tm_mon != mo - 1) {
        return false;
    }
    *out = (int64_t)t;
    return true;
}

void sigv4_amz_date(int64_t now_s, char amz_date[17])
{
    /* Clamp to years 1970..9999 so the text always has 16 characters. */
    now_s = SL_MAX(now_s, (int64_t)0);
    now_s = SL_MIN(now_s, (int64_t)253402300799);
    time_t t = (time_t)now_s;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(amz_date, 17, "%Y%m%dT%H%M%SZ", &tm);
}
