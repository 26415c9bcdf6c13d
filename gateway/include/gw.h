/*
 * gw.h -- the gateway: the HTTP/2 front door that runs sluiced. It
 * verifies AWS Signature Version 4 with sigv4/ (sigv4.h).
 *
 * Threading: gw_main() owns the process's signal handling and threads.
 */
#ifndef SLUICE_GW_H
#define SLUICE_GW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sl.h"

/* ---- the server process ------------------------------------------------ */

/* Runs sluiced with its command line (see `sluiced --help`): --config FILE,
 * --check-config FILE, or no argument for the embedded default. Returns the
 * process exit status. */
int gw_main(int argc, char **argv);

#endif
