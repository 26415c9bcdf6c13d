/*
 * gw_console_history.h -- (gateway-internal) the last minutes of every
 * queue's counts (gw_console_history.c), so the console's queue charts
 * show what happened before the page was opened: the engineer paged at
 * 3 a.m. opens the console after the trouble began, not before.
 *
 * A thread of its own samples ready, in-flight and delayed of every queue
 * every GW_CONSOLE_HISTORY_STEP_S and keeps GW_CONSOLE_HISTORY_SAMPLES of
 * them; at most GW_CONSOLE_HISTORY_MAX_QUEUES queues are followed (the
 * first in (tenant, name) order), which bounds its memory at about 1.6 KiB a
 * queue (twice that during a pass): 13 MiB at most. The counts come from memory
 * (part_queue_counts), so a pass costs no I/O and takes no lock the request path waits on for long.
 *
 * Threading: start and stop on the main thread; the JSON from any thread.
 */
#ifndef SLUICE_GW_CONSOLE_HISTORY_H
#define SLUICE_GW_CONSOLE_HISTORY_H

#include <stdint.h>

#include <jansson.h>

#define GW_CONSOLE_HISTORY_STEP_S 5u
#define GW_CONSOLE_HISTORY_SAMPLES 120u /* ten minutes */
#define GW_CONSOLE_HISTORY_MAX_QUEUES 4096u

struct part_engine;
struct gw_console_history;

/* Starts sampling engine (borrowed; it must outlive the history) now and
 * then every GW_CONSOLE_HISTORY_STEP_S. */
struct gw_console_history *gw__console_history_start(struct part_engine *engine);

/* Stops the thread and frees everything. NULL is fine. */
void gw__console_history_stop(struct gw_console_history *h);

/* {"step_s": S, "queues": {"TENANT/QUEUE": {"t_ms": [...], "ready": [...],
 * "inflight": [...], "delayed": [...]}}}, oldest sample first; t_ms is the
 * wall time of each sample. A new reference. */
json_t *gw__console_history_json(struct gw_console_history *h);

#endif
