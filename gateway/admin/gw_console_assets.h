/*
 * gw_console_assets.h -- (gateway-internal) the web console's static files
 * (gateway/admin/console/), compiled into sluiced: CMake runs
 * gateway/admin/console/embed.cmake at build time, which writes the table below
 * into a generated C file. Serving them needs no file system and no
 * network, and the binary is the whole console.
 */
#ifndef SLUICE_GW_CONSOLE_ASSETS_H
#define SLUICE_GW_CONSOLE_ASSETS_H

#include <stddef.h>

struct gw_console_asset {
    const char *name;           /* file name in gateway/admin/console/, e.g. "console.js" */
    const char *media_type;     /* Content-Type */
    const unsigned char *bytes; /* the file */
    size_t len;
    const char *etag; /* quoted, from the file's SHA-256 */
};

extern const struct gw_console_asset gw__console_assets[];
extern const size_t gw__console_asset_count;

#endif
