/* SPDX-License-Identifier: MIT */
/*
 * minimprun's command line (see run_opts.h): the usage text, the options
 * with their checks, and the hosts they name. Options follow mpirun's
 * spelling; "--name=value" works for every long option that takes a
 * value, and the first word that is not an option starts the program.
 */
#include "run_opts.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "common.h"
#include "hosts.h"
#include "minimp.h"
#include "run_env.h"
#include "transport/util.h"

#define RUN_MAX_RANKS 65536

static void run_usage(FILE *f) {
  fprintf(f, "Usage: minimprun [options] [-n N] program [args...]\n"
             "Starts N copies of program, here or on other hosts, as one "
             "libminimp job.\n"
             "\n"
             "Options:\n"
             "  -n, -np N          number of ranks (default: every slot of "
             "the hosts;\n"
             "                     required without hosts or an allocation)\n"
             "  -H, --host LIST    hosts, e.g. node1:2,node2 (\":N\" = N "
             "slots, else 1)\n"
             "  --hostfile FILE    hosts, one per line: \"node1 slots=2\"; "
             "also\n"
             "                     --machinefile\n"
             "  --map-by slot|node fill each host's slots in turn (default), "
             "or one\n"
             "                     rank per host, round-robin\n"
             "  --oversubscribe    allow more ranks than slots\n"
             "  --agent CMD        how to run a command on a host: CMD HOST "
             "COMMAND...\n"
             "                     (default $MINIMP_AGENT, else srun in a "
             "Slurm\n"
             "                     allocation, else \"ssh\"; e.g. \"ip netns "
             "exec\");\n"
             "                     also --launch-agent\n"
             "  --launcher PATH    minimprun's path on the other hosts "
             "(default: ours)\n"
             "  --iface SPEC       interface or CIDR the job uses (exported as "
             "MINIMP_IFACE)\n"
             "  --encrypt          seal every TCP frame between ranks "
             "(exported as\n"
             "                     MINIMP_ENCRYPT=1; docs/security.md)\n"
             "  --ignore-allocation  do not take the hosts from a Slurm or "
             "PBS allocation\n"
             "  -N, --npernode N   N ranks on every host (its slots become "
             "N)\n"
             "  --bind-to core|none  bind each rank to one core of its host, "
             "or not\n"
             "                     (default none)\n"
             "  --report-bindings  print each rank's CPU set on stderr\n"
             "  --wdir DIR         the ranks' working directory (default: "
             "ours)\n"
             "  --output-filename DIR  each rank's stdout and stderr go to\n"
             "                     DIR/1/rank.N/stdout and .../stderr\n"
             "  --tag-output       prefix every output line with \"[rank] \"\n"
             "  --timeout S        stop the job after S seconds (exit 110)\n"
             "  -x VAR             export VAR from this environment\n"
             "  -x VAR=VALUE       set VAR to VALUE in every rank\n"
             "  --verbose          report what the launcher does on stderr\n"
             "  -h, --help         show this help and exit\n"
             "  -V, --version      show the version and exit\n"
             "\n"
             "Also accepted: --np, --wd, and mpirun's single-dash spellings "
             "-host,\n"
             "-hostfile, -machinefile, -npernode, -bind-to, -report-bindings, "
             "-wdir,\n"
             "-wd and -output-filename. \"--name=value\" works for every "
             "long option\n"
             "that takes a value; \"--\" or the first word that is not an "
             "option ends\n"
             "the options.\n"
             "\n"
             "Inside a Slurm allocation (SLURM_JOB_NODELIST, "
             "SLURM_TASKS_PER_NODE) or a\n"
             "PBS job (PBS_NODEFILE), the hosts and slots are the "
             "allocation's unless\n"
             "--host or --hostfile is given.\n"
             "\n"
             "Exit status: 0 when every rank succeeded; otherwise the first\n"
             "failing rank's exit code (128+N if killed by signal N, its code\n"
             "if it called mmp_abort), 110 on timeout, 2 on a usage error,\n"
             "126/127 if the program cannot be run, 1 for other failures\n"
             "(including a host that cannot be started or is lost).\n");
}

static int run_usage_error(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

static int run_usage_error(const char *fmt, ...) {
  char line[512];
  va_list ap;

  va_start(ap, fmt);
  vsnprintf(line, sizeof(line), fmt, ap);
  va_end(ap);
  fprintf(stderr, "minimprun: %s\nTry 'minimprun --help' for more.\n", line);
  return MMP__RUN_EXIT_USAGE;
}

static int run_valid_var(const char *s) {
  const char *p = s;

  if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || *p == '_'))
    return 0;
  for (p++; *p != '\0' && *p != '='; p++)
    if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
          (*p >= '0' && *p <= '9') || *p == '_'))
      return 0;
  return 1;
}

/* The option at argv[*i]: a flag or an option with a value. */
typedef struct run_opt_s {
  const char *a;   /* as written */
  const char *eq;  /* "--name=value": the '=' */
  size_t alen;     /* the name's length */
  const char *val; /* its value, once taken */
} run_opt_t;

/*
 * Handles the options about hosts and the agent. Returns -1 to go on, -2
 * when `o` is none of them, or the exit status to leave with.
 */
static int run_parse_hosts(mmp__run_job_t *j, run_opt_t *o) {
  char err[512];
  int rc;

#define RUN_IS(name)                                                           \
  (o->alen == strlen(name) && strncmp(o->a, name, o->alen) == 0)
  if (RUN_IS("-H") || RUN_IS("--host") || RUN_IS("-host")) {
    rc = mmp__hosts_parse_list(&j->hl, o->val, err, sizeof(err));
    j->have_hosts = 1;
  } else if (RUN_IS("--hostfile") || RUN_IS("-hostfile") ||
             RUN_IS("--machinefile") || RUN_IS("-machinefile")) {
    if (j->hostfile != NULL)
      return run_usage_error("give only one --hostfile");
    j->hostfile = o->val;
    return -1; /* read once the command line is complete */
  } else if (RUN_IS("--map-by")) {
    if (strcmp(o->val, "slot") != 0 && strcmp(o->val, "node") != 0)
      return run_usage_error("bad --map-by '%s' (slot or node)", o->val);
    j->map_policy = o->val[0] == 'n' ? MMP__MAP_NODE : MMP__MAP_SLOT;
    return -1;
  } else if (RUN_IS("--agent") || RUN_IS("--launch-agent")) {
    if (o->val[strspn(o->val, " \t\n")] == '\0')
      return run_usage_error("option '%.*s' needs a command", (int)o->alen,
                             o->a);
    j->agent = o->val;
    return -1;
  } else if (RUN_IS("--launcher")) {
    j->launcher = o->val;
    return -1;
  } else if (RUN_IS("--iface")) {
    if (o->val[0] == '\0')
      return run_usage_error("option '--iface' needs an interface or CIDR");
    j->iface = o->val;
    return -1;
  } else {
    return -2;
  }
#undef RUN_IS
  if (rc == MMP_ENOMEM)
    return 1;
  return rc != 0 ? run_usage_error("%s", err) : -1;
}

/*
 * Handles the options about where and how each rank runs: -N, --bind-to,
 * --report-bindings, --wdir, --output-filename. Returns -1 to go on, -2
 * when `o` is none of them, or the exit status to leave with.
 */
static int run_parse_rank_opts(mmp__run_job_t *j, run_opt_t *o) {
  long v;

#define RUN_IS(name)                                                           \
  (o->alen == strlen(name) && strncmp(o->a, name, o->alen) == 0)
  if (RUN_IS("-N") || RUN_IS("--npernode") || RUN_IS("-npernode")) {
    if (mmp__parse_long(o->val, 1, RUN_MAX_RANKS, &v) != 0)
      return run_usage_error("bad ranks per node '%s' for %.*s (1..%d)", o->val,
                             (int)o->alen, o->a, RUN_MAX_RANKS);
    j->npernode = (int)v;
  } else if (RUN_IS("--bind-to") || RUN_IS("-bind-to")) {
    if (strcmp(o->val, "core") != 0 && strcmp(o->val, "none") != 0)
      return run_usage_error("bad --bind-to '%s' (core or none)", o->val);
    j->bind_core = o->val[0] == 'c';
  } else if (RUN_IS("--report-bindings") || RUN_IS("-report-bindings")) {
    j->report_bindings = 1;
  } else if (RUN_IS("--wdir") || RUN_IS("-wdir") || RUN_IS("--wd") ||
             RUN_IS("-wd")) {
    if (o->val[0] == '\0')
      return run_usage_error("option '--wdir' needs a directory");
    j->wdir = o->val;
  } else if (RUN_IS("--output-filename") || RUN_IS("-output-filename")) {
    if (o->val[0] == '\0')
      return run_usage_error("option '--output-filename' needs a directory");
    j->outdir = o->val;
  } else if (RUN_IS("--ignore-allocation")) {
    j->ignore_alloc = 1;
  } else {
    return -2;
  }
#undef RUN_IS
  return -1;
}

/* 1 if `o` is one of the `n` names. */
static int run_opt_in(const run_opt_t *o, const char *const *names, size_t n) {
  size_t i;

  for (i = 0; i < n; i++)
    if (o->alen == strlen(names[i]) && strncmp(o->a, names[i], o->alen) == 0)
      return 1;
  return 0;
}

/* The options that take a value. */
static int run_takes_value(const run_opt_t *o) {
  /* clang-format off */
  static const char *const names[] = {
      "-n", "-np", "--np", "--timeout", "-x",
      "-H", "--host", "-host", "--hostfile", "-hostfile",
      "--machinefile", "-machinefile", "--map-by",
      "--agent", "--launch-agent", "--launcher", "--iface",
      "-N", "--npernode", "-npernode", "--bind-to", "-bind-to",
      "--wdir", "-wdir", "--wd", "-wd",
      "--output-filename", "-output-filename"};
  /* clang-format on */

  return run_opt_in(o, names, MMP__ARRAY_SIZE(names));
}

/* The options that take none. */
static int run_is_flag(const run_opt_t *o) {
  /* clang-format off */
  static const char *const names[] = {
      "-h", "--help", "-V", "--version", "--tag-output", "--verbose",
      "--oversubscribe", "--report-bindings", "-report-bindings",
      "--ignore-allocation", "--encrypt"};
  /* clang-format on */

  return run_opt_in(o, names, MMP__ARRAY_SIZE(names));
}

/* Handles one option. Returns -1 to go on, or the exit status. */
static int run_parse_one(mmp__run_job_t *j, run_opt_t *o) {
  long v;
  int rc;

#define RUN_IS(name)                                                           \
  (o->alen == strlen(name) && strncmp(o->a, name, o->alen) == 0)
  if (run_is_flag(o) && o->eq != NULL)
    return run_usage_error("option '%.*s' takes no value", (int)o->alen, o->a);
  if (RUN_IS("-h") || RUN_IS("--help")) {
    run_usage(stdout);
    return 0;
  } else if (RUN_IS("-V") || RUN_IS("--version")) {
    printf("minimprun (libminimp) %s\n", MMP__LAUNCHER_VERSION);
    return 0;
  } else if (RUN_IS("-n") || RUN_IS("-np") || RUN_IS("--np")) {
    if (mmp__parse_long(o->val, 1, RUN_MAX_RANKS, &v) != 0)
      return run_usage_error("bad number of ranks '%s' (1..%d)", o->val,
                             RUN_MAX_RANKS);
    j->n = (int)v;
  } else if (RUN_IS("--timeout")) {
    if (mmp__parse_long(o->val, 1, INT_MAX / 1000, &v) != 0)
      return run_usage_error("bad timeout '%s' (whole seconds >= 1)", o->val);
    j->timeout_s = v;
  } else if (RUN_IS("--tag-output")) {
    j->tag_output = 1;
  } else if (RUN_IS("--verbose")) {
    j->verbose = 1;
  } else if (RUN_IS("--oversubscribe")) {
    j->oversubscribe = 1;
  } else if (RUN_IS("--encrypt")) {
    j->encrypt = 1;
  } else if (RUN_IS("-x")) {
    if (!run_valid_var(o->val))
      return run_usage_error("bad variable '%s' for -x", o->val);
    j->exports[j->nexports++] = (char *)o->val;
  } else if ((rc = run_parse_hosts(j, o)) != -2) {
    return rc;
  } else if ((rc = run_parse_rank_opts(j, o)) != -2) {
    return rc;
  } else {
    return run_usage_error("unknown option '%s'", o->a);
  }
#undef RUN_IS
  return -1;
}

/* The agent inside a Slurm allocation: one srun step per host, one task
 * on it, sharing the allocation with the job's other steps (--overlap)
 * and holding every CPU of the node (--whole) so that the ranks the
 * daemon starts are not confined to the step's one CPU. */
#define RUN_SLURM_AGENT                                                        \
  "srun --nodes=1 --ntasks=1 --overlap --whole --cpu-bind=none --nodelist"

/* A non-empty variable's value, else NULL. */
static const char *run_getenv(const char *name) {
  const char *v = getenv(name);

  return v != NULL && *v != '\0' ? v : NULL;
}

/*
 * Without --host and --hostfile, the hosts of a Slurm allocation or a PBS
 * job, as Open MPI's mpirun takes them; then the default agent. Returns
 * -1 to go on or the exit status.
 */
static int run_parse_alloc(mmp__run_job_t *j) {
  const char *nodes = run_getenv("SLURM_JOB_NODELIST");
  const char *pbs = run_getenv("PBS_NODEFILE");
  const char *agent = getenv("MINIMP_AGENT");
  char err[512];
  int rc = 0;

  if (nodes == NULL)
    nodes = run_getenv("SLURM_NODELIST");
  if (!j->have_hosts && !j->ignore_alloc && nodes != NULL) {
    const char *tasks = run_getenv("SLURM_TASKS_PER_NODE");
    if (tasks == NULL)
      return run_usage_error("SLURM_JOB_NODELIST is set but "
                             "SLURM_TASKS_PER_NODE is not; give --host, or "
                             "--ignore-allocation");
    rc = mmp__hosts_parse_slurm(&j->hl, nodes, tasks, err, sizeof(err));
    j->alloc = "Slurm";
  } else if (!j->have_hosts && !j->ignore_alloc && pbs != NULL) {
    /* One line per slot: a host listed again gains a slot. */
    rc = mmp__hosts_parse_file(&j->hl, pbs, err, sizeof(err));
    j->alloc = "PBS";
  }
  if (rc == MMP_ENOMEM)
    return 1;
  if (rc != 0)
    return run_usage_error("%s", err);
  j->have_hosts |= j->alloc != NULL;
  if (j->agent == NULL && agent != NULL) {
    if (agent[strspn(agent, " \t\n")] == '\0')
      return run_usage_error("MINIMP_AGENT='%s' names no command", agent);
    j->agent = agent;
  }
  if (j->agent == NULL)
    j->agent = j->alloc != NULL && j->alloc[0] == 'S' ? RUN_SLURM_AGENT : "ssh";
  return -1;
}

/* -N: every host gets exactly that many slots; --wdir made absolute, so
 * that other hosts see the same directory. Returns -1 or the status. */
static int run_parse_rank_finish(mmp__run_job_t *j) {
  char cwd[4096];
  size_t len = sizeof(cwd);
  int h;

  if (j->npernode > 0) {
    if (!j->have_hosts &&
        mmp__hosts_add(&j->hl, "localhost", 9, 1, cwd, sizeof(cwd)) != 0)
      return 1;
    j->have_hosts = 1;
    for (h = 0; h < j->hl.n; h++)
      j->hl.hosts[h].slots = j->npernode;
  }
  if (j->wdir != NULL && j->wdir[0] != '/') {
    if (uv_cwd(cwd, &len) != 0)
      return run_usage_error("cannot resolve --wdir '%s': no current "
                             "directory",
                             j->wdir);
    j->wdir_abs = malloc(len + strlen(j->wdir) + 2);
    if (j->wdir_abs == NULL)
      return 1;
    sprintf(j->wdir_abs, "%s/%s", cwd, j->wdir);
    j->wdir = j->wdir_abs;
  }
  return -1;
}

/* After the command line: the -x names that need every option, the
 * hostfile, the number of ranks. */
static int run_parse_finish(mmp__run_job_t *j) {
  const char *owned;
  char err[512];
  long slots;
  int rc, k;

  for (k = 0; k < j->nexports; k++) {
    owned = mmp__run_env_owned(j, j->exports[k]);
    /* A rank would get the name twice; MINIMP_SIZE would not match. */
    if (owned != NULL)
      return run_usage_error(
          "cannot set %s with -x: minimprun sets it %s", owned,
          strcmp(owned, "MINIMP_IFACE") == 0     ? "from --iface"
          : strcmp(owned, "MINIMP_ENCRYPT") == 0 ? "from --encrypt"
                                                 : "for every rank");
  }
  if (j->hostfile != NULL && j->have_hosts)
    return run_usage_error("give either --host or --hostfile, not both");
  if (j->hostfile != NULL) {
    rc = mmp__hosts_parse_file(&j->hl, j->hostfile, err, sizeof(err));
    if (rc == MMP_ENOMEM)
      return 1;
    if (rc != 0) {
      fprintf(stderr, "minimprun: %s\n", err);
      return MMP__RUN_EXIT_USAGE;
    }
    j->have_hosts = 1;
  }
  if ((rc = run_parse_alloc(j)) >= 0 || (rc = run_parse_rank_finish(j)) >= 0)
    return rc;
  if (!j->have_hosts && j->n == 0)
    return run_usage_error("missing -n N");
  if (j->n == 0) {
    slots = mmp__hosts_slots(&j->hl);
    if (slots > RUN_MAX_RANKS)
      return run_usage_error("the hosts have %ld slots; give -n N (at most "
                             "%d)",
                             slots, RUN_MAX_RANKS);
    j->n = (int)slots;
  }
  return -1;
}

int mmp__run_parse(mmp__run_job_t *j, int argc, char **argv) {
  int i, rc;

  j->exports = calloc((size_t)argc, sizeof(*j->exports));
  if (j->exports == NULL)
    return 1;
  for (i = 1; i < argc; i++) {
    run_opt_t o;
    o.a = argv[i];
    o.eq = strncmp(o.a, "--", 2) == 0 ? strchr(o.a, '=') : NULL;
    o.alen = o.eq != NULL ? (size_t)(o.eq - o.a) : strlen(o.a);
    o.val = NULL;
    if (o.a[0] != '-' || strcmp(o.a, "-") == 0)
      break;
    if (strcmp(o.a, "--") == 0) {
      i++;
      break;
    }
    if (run_takes_value(&o)) {
      if (o.eq != NULL)
        o.val = o.eq + 1;
      else if (i + 1 < argc)
        o.val = argv[++i];
      else
        return run_usage_error("option '%.*s' needs a value", (int)o.alen, o.a);
    }
    rc = run_parse_one(j, &o);
    if (rc >= 0)
      return rc;
  }
  rc = run_parse_finish(j);
  if (rc >= 0)
    return rc;
  if (i >= argc)
    return run_usage_error("missing the program to run");
  j->argv = argv + i;
  return -1;
}

char **mmp__run_split_words(const char *s) {
  size_t len = strlen(s), nw = len / 2 + 2, i = 0;
  char **w = malloc(nw * sizeof(*w) + len + 1);
  char *p, *tok, *save = NULL;

  if (w == NULL)
    return NULL;
  p = (char *)(w + nw);
  memcpy(p, s, len + 1);
  for (tok = strtok_r(p, " \t\n", &save); tok != NULL;
       tok = strtok_r(NULL, " \t\n", &save))
    w[i++] = tok;
  w[i] = NULL;
  return w;
}
