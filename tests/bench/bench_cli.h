/* SPDX-License-Identifier: MIT */
/*
 * minimp-bench's command-line helpers (bench_cli.c): strict number and
 * size parsing, name lists checked against the library's tables, usage
 * errors that name the bad value, and the "# minimp-bench ..." line that
 * starts every CSV the tool writes (version, commit, date, host, ranks,
 * arguments), so that a file says where its numbers came from.
 */
#ifndef MMP_BENCH_CLI_H
#define MMP_BENCH_CLI_H

#include <stddef.h>
#include <stdio.h>

/* A table of names: name(ctx, i) for i = 0, 1, ... until NULL. */
typedef const char *(*cli_name_fn)(const void *ctx, int i);

/* Records the command line for cli_comment(). */
void cli_set_args(int argc, char **argv);

/* "0.1.0" and the `git describe` of the build ("unknown" outside git). */
const char *cli_version(void);
const char *cli_commit(void);

/* Prints "minimp-bench: MESSAGE" and a pointer to --help on stderr (from
 * one rank only when run under minimprun); returns 2, the usage exit
 * status. */
int cli_fail(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* A whole number in [lo, hi] (strtol, no trailing characters). Returns 0,
 * or 2 after saying which option had which bad value. */
int cli_long(const char *opt, const char *v, long lo, long hi, long *out);

/* A number in [lo, hi] (strtod, finite). 0, or 2 as cli_long. */
int cli_double(const char *opt, const char *v, double lo, double hi,
               double *out);

/* A byte count: digits with an optional k, m or g suffix (powers of
 * 1024). 0, or 2 as cli_long. */
int cli_size(const char *opt, const char *v, size_t *out);

/* A comma list of byte counts into out[0 .. max-1]. 0, or 2. */
int cli_sizes(const char *opt, const char *list, size_t *out, int max, int *n);

/* A comma list of names from `name` (an "all" item stands for every name,
 * if allow_all) into their numbers. `what` names the kind in errors
 * ("algorithm", "distribution"). 0, or 2 with the known names listed. */
int cli_names(const char *opt, const char *list, const char *what,
              cli_name_fn name, const void *ctx, int allow_all, int *out,
              int max, int *n);

/* Algorithm number i of collective `coll` (MMP_COLL_*) as the benchmark
 * numbers them: 0 AUTO ("auto"), then the library's list (mmp_coll_algs)
 * from 1; NULL past its end. A cli_name_fn with ctx pointing to coll. */
const char *cli_alg(const void *coll, int i);

/* Writes every name of the table to `f`, comma-separated, wrapped at 78
 * columns with `indent` spaces before each line. */
void cli_print_names(FILE *f, int indent, cli_name_fn name, const void *ctx);

/* Writes "# minimp-bench VERSION commit C date D host H ranks P args
 * ..." and a newline to `f`; P is the world's size (call after mmp_init). */
void cli_comment(FILE *f);

/* Opens `path` for writing and writes cli_comment() and the column
 * `header` line; NULL for a NULL path. A file that cannot be opened is
 * reported with its name and aborts the job (exit status 1). */
FILE *cli_open_csv(const char *path, const char *header);

#endif /* MMP_BENCH_CLI_H */
