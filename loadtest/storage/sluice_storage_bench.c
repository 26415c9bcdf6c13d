/*
 * sluice_storage_bench.c -- main() of build/sluice-storage-bench: the
 * storage benchmark of the partitions engine (no HTTP), with a raw SQLite
 * ceiling in the same run. For every P and durability of the matrix it
 * runs the engine cell, then the ceiling cell sized by what the engine's
 * group commits achieved; or, with --memory N, only the resident-memory
 * probe; or, with --ceiling-only, only the ceiling, sized by a measured
 * number of jobs per commit (loadtest/cost-bench gives it the gateway's).
 * See docs/benchmarks.md, "Storage".
 *
 * Exit status: 0 the run completed; 1 bad usage or a report could not be
 * written; 2 a phase failed (engine or ceiling errors; reason on stderr).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sb_int.h"

static char *join_argv(int argc, char **argv)
{
    struct sl_buf b;
    sl_buf_init(&b);
    for (int i = 0; i < argc; i++) {
        sl_buf_printf(&b, "%s%s", i ? " " : "", argv[i]);
    }
    return sl_buf_take(&b, NULL);
}

int main(int argc, char **argv)
{
    struct sb_run run = {0};
    if (sb_opts_parse(argc, argv, &run.opt) != SL_OK) {
        return 1;
    }
    sl_log_set_level(SL_LOG_WARN);
    char *command = join_argv(argc, argv);
    run.opt.command = command;
    run.started_ms = sl_wall_ms();
    int status = 0;
    if (run.opt.memory > 0) {
        run.has_memory = true;
        if (sb_memory_probe(&run.opt, &run.memory) != SL_OK) {
            status = 2;
        }
    } else {
        run.ncells = run.opt.npartitions * run.opt.ndurability;
        run.cells = sl_xcalloc(run.ncells, sizeof *run.cells);
        size_t i = 0;
        for (size_t d = 0; d < run.opt.ndurability && status == 0; d++) {
            for (size_t p = 0; p < run.opt.npartitions && status == 0; p++, i++) {
                struct sb_cell *c = &run.cells[i];
                c->partitions = run.opt.partitions[p];
                c->durability = run.opt.durability[d];
                if ((!run.opt.ceiling_only && sb_engine_cell(&run.opt, c) != SL_OK) ||
                    (run.opt.ceiling && sb_raw_cell(&run.opt, c) != SL_OK)) {
                    status = 2;
                }
            }
        }
        run.ncells = i;
    }
    sb_report_text(&run);
    if (run.opt.json_path != NULL && sb_report_json(&run, run.opt.json_path) != SL_OK) {
        status = status ? status : 1;
    }
    if (run.opt.markdown_path != NULL && sb_report_markdown(&run, run.opt.markdown_path) != SL_OK) {
        status = status ? status : 1;
    }
    free(run.cells);
    free(command);
    return status;
}
