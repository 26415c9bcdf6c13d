/*
 * fuzz_cfg_yaml.c -- configuration bytes -> cfg_load_string -> free it all.
 *
 * The loader faces files written by hand and, through --check-config and
 * SIGHUP, whatever an operator points it at: it must never crash, read out
 * of bounds or leak, whatever the bytes. Both outcomes are exercised: a
 * valid snapshot gets its lookups called before it is dropped.
 */
#include "cfg.h"
#include "sl.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cfg_snapshot *s = NULL;
    struct cfg_diags d;
    if (cfg_load_string("fuzz.yaml", (const char *)data, size, &s, &d) == SL_OK) {
        struct cfg_principal p;
        for (size_t i = 0; i < s->tenant_count; i++) {
            const struct cfg_tenant *t = s->tenants + i;
            if (!cfg_find_principal(s, t->access_key_id, strlen(t->access_key_id), &p) ||
                cfg_find_tenant(s, t->name, strlen(t->name)) != t) {
                __builtin_trap(); /* a loaded tenant must be found again */
            }
        }
        char buf[256];
        (void)cfg_restart_only_changes(s, s, buf, sizeof(buf));
        cfg_snapshot_unref(s);
    } else if (d.count == 0) {
        __builtin_trap(); /* a refusal always says why */
    }
    cfg_diags_free(&d);
    return 0;
}
