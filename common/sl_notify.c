/*
 * sl_notify.c -- readiness, reload and stop notifications to systemd
 * through libsystemd's sd_notify (Type=notify in sluiced.service).
 */
#include <stdio.h>

#include <systemd/sd-daemon.h>

#include "sl.h"

void sl_notify(const char *fmt, ...)
{
    char state[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(state, sizeof state, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    /* 0: keep NOTIFY_SOCKET, so that every later state reaches systemd too. */
    int rc = sd_notify(0, state);
    if (rc < 0)
        sl_log(SL_LOG_WARN, "main", "sd_notify failed (%d); systemd may not see this state", rc);
}
