/* SPDX-License-Identifier: MIT */
/*
 * Configuration from the environment. The job identity comes from the
 * variables minimprun exports (or Slurm's); tuning comes from MINIMP_*
 * variables with measured defaults (docs/design/protocols.md explains each).
 * Every malformed value is reported by name; none is silently ignored.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "transport/hostlist.h"

/* Defaults, measured where it matters (docs/design/protocols.md). The eager
 * limit is the crossover between eager (one more copy, no handshake) and
 * rendezvous (zero copy, one more round trip), kept so that a whole eager
 * frame fits one 64 KiB loopback segment. */
#define DEF_EAGER_LIMIT (60u * 1024)
/* The same through shared memory, where copies are cheap and a hop pays
 * mostly for the hand-overs between ranks that a rendezvous adds, all the
 * more where ranks share CPUs (docs/data/history/protocols.md has the sweep).
 */
#define DEF_SHM_EAGER_LIMIT (128u * 1024)
#define DEF_MAX_FRAME (64u * 1024 * 1024)
#define DEF_CHUNK (512u * 1024)
#define DEF_WINDOW (2u * 1024 * 1024)
#define DEF_GRACE_US 1000u
#define DEF_SPIN_US 50u /* idle polling before a wait sleeps */
/* The same, on a machine with more ranks than CPUs: there every pass
 * yields the CPU, so the budget can be long (docs/design/progress.md). */
#define DEF_SPIN_SHARED_US 1000u
/* While the application is busy in the library, the progress thread looks
 * at most this often whether it has gone quiet. On a shared machine each
 * look is a timer wake-up that preempts a rank, so it looks far less
 * often there (the cost: docs/data/history/progress.md). */
#define DEF_CHECK_US 4000u
#define DEF_CHECK_SHARED_US 64000u
#define DEF_HANDSHAKE_MS 10000u
#define DEF_PEER_TIMEOUT_MS 8000u /* silent peers are lost in 8-9 s */
/* Unmatched rendezvous requests one peer may leave here: about 7 MiB of
 * entries, far beyond what a program keeps outstanding to one rank. */
#define DEF_MAX_UNEXP_RTS 65536u
#define DEF_BOOT_TIMEOUT_MS 60000u
/* The job's multicast group lies in 239.0.0.0/8, the administratively
 * scoped range that routers do not forward beyond the site. */
#define DEF_MCAST_GROUP 0xef000000u
#define DEF_MCAST_BITS 8u
/* Where the job's addresses are IPv6: ff15::/16, transient (T flag: not
 * an IANA assignment) and site-scoped (scope 5, administratively
 * bounded, like 239.0.0.0/8); docs/design/transport.md says why this scope. */
#define DEF_MCAST_GROUP6_HI 0xff
#define DEF_MCAST_GROUP6_LO 0x15
#define DEF_MCAST_BITS6 16u
/* A multicast receiver that has not got its message this long after it
 * called the collective fails it with MMP_ETIMEDOUT: a bound, as
 * MINIMP_PEER_TIMEOUT_MS is for silent peers. */
#define DEF_MCAST_TIMEOUT_MS 10000u
#define DEF_MCAST_SOCKBUF (8u * 1024 * 1024)

static int env_size(const char *name, uint64_t min, uint64_t max,
                    uint64_t *out) {
  const char *s = getenv(name);
  uint64_t v;

  if (s == NULL || *s == '\0')
    return 0;
  if (mmp__parse_size(s, &v) != 0 || v < min || v > max) {
    MMP__LOG(MMP__LOG_ERROR,
             "%s='%s' is not a size between %llu and %llu (suffixes k, m, g)",
             name, s, (unsigned long long)min, (unsigned long long)max);
    return MMP_EENV;
  }
  *out = v;
  return 0;
}

static int env_uint(const char *name, long min, long max, unsigned *out) {
  const char *s = getenv(name);
  long v;

  if (s == NULL || *s == '\0')
    return 0;
  if (mmp__parse_long(s, min, max, &v) != 0) {
    MMP__LOG(MMP__LOG_ERROR, "%s='%s' is not an integer between %ld and %ld",
             name, s, min, max);
    return MMP_EENV;
  }
  *out = (unsigned)v;
  return 0;
}

static int env_int(const char *name, long min, long max, int *out,
                   int *present) {
  const char *s = getenv(name);
  long v;

  *present = s != NULL && *s != '\0';
  if (!*present)
    return 0;
  if (mmp__parse_long(s, min, max, &v) != 0) {
    MMP__LOG(MMP__LOG_ERROR, "%s='%s' is not an integer between %ld and %ld",
             name, s, min, max);
    return MMP_EENV;
  }
  *out = (int)v;
  return 0;
}

/* A number in [min, max] (strtod's syntax), or `def` when unset. */
static int env_double(const char *name, double min, double max, double def,
                      double *out, int *present) {
  const char *s = getenv(name);
  char *end;
  double v;

  *present = s != NULL && *s != '\0';
  *out = def;
  if (!*present)
    return 0;
  v = strtod(s, &end);
  if (end == s || *end != '\0' || !(v >= min && v <= max)) {
    MMP__LOG(MMP__LOG_ERROR, "%s='%s' is not a number between %g and %g", name,
             s, min, max);
    return MMP_EENV;
  }
  *out = v;
  return 0;
}

const mmp__coll_hooks_t *mmp__coll_hooks;

/* Copies the n bytes at s into out (MMP__COLL_NAME_MAX) as a name: lower
 * case letters, digits and '_'. 0, or -1 for anything else. */
static int env_name(const char *s, size_t n, char *out) {
  size_t i;

  if (n == 0 || n >= MMP__COLL_NAME_MAX)
    return -1;
  for (i = 0; i < n; i++) {
    char c = s[i];
    if (c >= 'A' && c <= 'Z')
      c = (char)(c - 'A' + 'a');
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
      return -1;
    out[i] = c;
  }
  out[n] = '\0';
  return 0;
}

/* One option of a MINIMP_<COLLECTIVE>_ALG value, key=value (n bytes at
 * s), into *a. 0, or -1 for an unknown or repeated key or a bad value. */
static int env_alg_option(const char *s, size_t n, mmp__coll_env_t *a) {
  static const struct {
    const char *key;
    unsigned opt;
  } keys[] = {
      {"segment", MMP_OPT_SEGMENT}, {"radix", MMP_OPT_RADIX},
      {"groups", MMP_OPT_GROUPS},   {"inner", MMP_OPT_INNER},
      {"outer", MMP_OPT_OUTER},     {"rows", MMP_OPT_ROWS},
      {"window", MMP_OPT_WINDOW},
  };
  const char *eq = memchr(s, '=', n);
  char val[64];
  size_t k, klen, vlen;
  int *num = NULL;
  long v;

  if (eq == NULL)
    return -1;
  klen = (size_t)(eq - s);
  vlen = n - klen - 1;
  if (vlen == 0 || vlen >= sizeof(val))
    return -1;
  memcpy(val, eq + 1, vlen);
  val[vlen] = '\0';
  for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
    if (strlen(keys[k].key) == klen && memcmp(keys[k].key, s, klen) == 0)
      break;
  if (k == sizeof(keys) / sizeof(keys[0]) || (a->given & keys[k].opt))
    return -1;
  a->given |= keys[k].opt;
  switch (keys[k].opt) {
  case MMP_OPT_SEGMENT:
    return mmp__parse_size(val, &a->segment) != 0 || a->segment == 0 ? -1 : 0;
  case MMP_OPT_INNER:
    return env_name(val, vlen, a->inner);
  case MMP_OPT_OUTER:
    return env_name(val, vlen, a->outer);
  case MMP_OPT_RADIX:
    num = &a->radix;
    break;
  case MMP_OPT_GROUPS:
    num = &a->groups;
    break;
  case MMP_OPT_ROWS:
    num = &a->rows;
    break;
  default:
    num = &a->window;
    break;
  }
  if (mmp__parse_long(val, 1, 1 << 30, &v) != 0)
    return -1;
  *num = (int)v;
  return 0;
}

/* Every MINIMP_<COLLECTIVE>_ALG of the environment into cc->algs. */
static int env_algs(mmp__coll_config_t *cc) {
  static const char pre[] = "MINIMP_", suf[] = "_ALG=";
  extern char **environ;
  char **e;

  for (e = environ; e != NULL && *e != NULL; e++) {
    const char *var = *e, *eq = strchr(var, '='), *v, *end;
    mmp__coll_env_t a;
    size_t n;

    if (eq == NULL || strncmp(var, pre, sizeof(pre) - 1) != 0 ||
        (size_t)(eq - var) < sizeof(pre) - 1 + sizeof(suf) - 1 ||
        strncmp(eq - (sizeof(suf) - 2), suf, sizeof(suf) - 1) != 0 ||
        eq[1] == '\0')
      continue;
    memset(&a, 0, sizeof(a));
    n = (size_t)(eq - var);
    if (n >= sizeof(a.var)) {
      MMP__LOG(MMP__LOG_ERROR, "%.*s: no collective has so long a name", (int)n,
               var);
      return MMP_EENV;
    }
    memcpy(a.var, var, n);
    /* name[,key=value]... */
    v = eq + 1;
    end = strchr(v, ',');
    n = end != NULL ? (size_t)(end - v) : strlen(v);
    if (env_name(v, n, a.alg) != 0)
      goto bad;
    while (end != NULL) {
      v = end + 1;
      end = strchr(v, ',');
      n = end != NULL ? (size_t)(end - v) : strlen(v);
      if (env_alg_option(v, n, &a) != 0)
        goto bad;
    }
    if (cc->nalgs == MMP__COLL_ENV_MAX) {
      MMP__LOG(MMP__LOG_ERROR, "more than %d MINIMP_<COLLECTIVE>_ALG set",
               MMP__COLL_ENV_MAX);
      return MMP_EENV;
    }
    cc->algs[cc->nalgs++] = a;
    continue;
  bad:
    MMP__LOG(MMP__LOG_ERROR,
             "%s is not an algorithm's name followed by options "
             "(segment=SIZE, radix, groups, rows, window=N, inner, "
             "outer=NAME), each once, separated by commas",
             var);
    return MMP_EENV;
  }
  return 0;
}

int mmp__config_coll(mmp__coll_config_t *out) {
  mmp__coll_config_t cc;
  uint64_t sym_min = UINT64_MAX, window = UINT64_MAX;
  int rc = 0, have_a, have_b, have_na, have_nb, unused, shared = 0;

  memset(&cc, 0, sizeof(cc));
  rc |= env_size("MINIMP_BCAST_SYM_MIN", 0, 1ull << 40, &sym_min);
  rc |=
      env_size("MINIMP_BCAST_ARRIVAL_WINDOW_US", 0, 3600ull * 1000000, &window);
  rc |= env_double("MINIMP_NET_ALPHA_US", 1e-3, 1e9, 0, &cc.net_alpha_us,
                   &have_a);
  rc |=
      env_double("MINIMP_NET_BETA_NS", 1e-6, 1e9, 0, &cc.net_beta_ns, &have_b);
  rc |=
      env_uint("MINIMP_COLL_TIMEOUT_MS", 0, 24u * 3600 * 1000, &cc.timeout_ms);
  rc |=
      env_double("MINIMP_NET_BURST_BYTES", 0, 1e15, 0, &cc.net_burst, &unused);
  rc |= env_int("MINIMP_NET_SHARED_CPUS", 0, 1, &shared, &unused);
  rc |=
      env_double("MINIMP_NET_GAMMA_NS", 0, 1e6, -1, &cc.net_gamma_ns, &unused);
  rc |= env_double("MINIMP_NET_NODE_ALPHA_US", 1e-3, 1e9, -1,
                   &cc.net_node_alpha_us, &have_na);
  rc |= env_double("MINIMP_NET_NODE_BETA_NS", 1e-6, 1e9, -1,
                   &cc.net_node_beta_ns, &have_nb);
  rc |= env_double("MINIMP_NET_GAP_US", 0, 1e9, 0, &cc.net_gap_us, &unused);
  if (rc == 0 && have_a != have_b) {
    MMP__LOG(MMP__LOG_ERROR,
             "a saved network profile needs both MINIMP_NET_ALPHA_US and "
             "MINIMP_NET_BETA_NS (only %s is set)",
             have_a ? "MINIMP_NET_ALPHA_US" : "MINIMP_NET_BETA_NS");
    rc = MMP_EENV;
  }
  /* The links within a node are part of a saved profile, both or none. */
  if (rc == 0 && (have_na != have_nb || (have_na && !have_a))) {
    MMP__LOG(MMP__LOG_ERROR,
             "MINIMP_NET_NODE_ALPHA_US and MINIMP_NET_NODE_BETA_NS go "
             "together, with MINIMP_NET_ALPHA_US and MINIMP_NET_BETA_NS");
    rc = MMP_EENV;
  }
  if (rc == 0)
    rc = env_algs(&cc);
  if (rc == 0 && mmp__coll_hooks != NULL &&
      mmp__coll_hooks->config_check != NULL)
    rc = mmp__coll_hooks->config_check(&cc);
  if (rc != 0)
    return MMP_EENV;
  /* Unset stays at the maximum: the algorithm's own default. */
  cc.bcast_sym_min = sym_min == UINT64_MAX ? -1 : (int64_t)sym_min;
  cc.arrival_window_us = window == UINT64_MAX ? -1 : (int64_t)window;
  cc.net_profile = have_a && have_b;
  cc.net_shared = shared;
  *out = cc;
  return 0;
}

/* A word from `names` (n of them): *out becomes its index. Unset leaves
 * *out alone; anything else is logged with the words it may be. */
static int env_choice(const char *name, const char *const *names, size_t n,
                      int *out) {
  const char *s = getenv(name);
  char list[128] = "";
  size_t i, at = 0;

  if (s == NULL || *s == '\0')
    return 0;
  for (i = 0; i < n; i++) {
    if (strcmp(s, names[i]) == 0) {
      *out = (int)i;
      return 0;
    }
    at += (size_t)snprintf(list + at, sizeof(list) - at, "%s%s",
                           i == 0 ? "" : ", ", names[i]);
    if (at >= sizeof(list))
      at = sizeof(list) - 1;
  }
  MMP__LOG(MMP__LOG_ERROR, "%s='%s' is not one of %s", name, s, list);
  return MMP_EENV;
}

static int env_log_level(void) {
  static const char *const names[] = {"error", "warn", "info", "debug"};
  int level = -1, rc;

  rc = env_choice("MINIMP_LOG", names, MMP__ARRAY_SIZE(names), &level);
  if (level >= 0)
    mmp__log_level = level;
  return rc;
}

/* MINIMP_PROGRESS (thread or external) and MINIMP_ERRORS (return or
 * fatal): who drives the loop between calls, and what an error does. */
static int env_modes(mmp__config_t *cfg) {
  static const char *const progress[] = {"thread", "external"};
  static const char *const errors[] = {"return", "fatal"};
  int fatal = -1, rc;

  rc = env_choice("MINIMP_PROGRESS", progress, MMP__ARRAY_SIZE(progress),
                  &cfg->progress_external);
  rc |= env_choice("MINIMP_ERRORS", errors, MMP__ARRAY_SIZE(errors), &fatal);
  if (fatal >= 0)
    mmp_set_errors_fatal(fatal);
  return rc;
}

/* MINIMP_SHM (on, off or ring) and MINIMP_SHM_RING (a power of two). */
static int env_shm(mmp__config_t *cfg) {
  static const char *const names[] = {"off", "on", "ring"};
  int rc = env_choice("MINIMP_SHM", names, MMP__ARRAY_SIZE(names), &cfg->shm);

  if (env_size("MINIMP_SHM_RING", MMP__SHM_RING_MIN, MMP__SHM_RING_MAX,
               &cfg->shm_ring) != 0)
    return MMP_EENV;
  if (cfg->shm_ring & (cfg->shm_ring - 1)) {
    MMP__LOG(MMP__LOG_ERROR, "MINIMP_SHM_RING='%s' is not a power of two",
             getenv("MINIMP_SHM_RING"));
    return MMP_EENV;
  }
  return rc;
}

/* MINIMP_MCAST_GROUP: an IPv4 group in 224.0.0.0/4 or an IPv6 one in
 * ff00::/8, alone or as a range "addr/n" the job's group is derived in.
 * Its family is kept: the channel checks it against the job's. */
static int env_mcast_group(mmp__config_t *cfg, const char *s) {
  const char *slash = strchr(s, '/');
  size_t n = slash != NULL ? (size_t)(slash - s) : strlen(s);
  int v6 = memchr(s, ':', n) != NULL;
  long bits = v6 ? 128 : 32;
  uint8_t a[16];
  char addr[64];

  if (n < sizeof(addr) &&
      (slash == NULL ||
       mmp__parse_long(slash + 1, v6 ? 8 : 4, bits, &bits) == 0)) {
    memcpy(addr, s, n);
    addr[n] = '\0';
    if (inet_pton(v6 ? AF_INET6 : AF_INET, addr, a) == 1 &&
        (v6 ? a[0] == 0xff : (a[0] >> 4) == 0xe)) {
      cfg->mcast_family = v6 ? AF_INET6 : AF_INET;
      if (v6) {
        memcpy(cfg->mcast_group6, a, 16);
        cfg->mcast_bits6 = (unsigned)bits;
      } else {
        uint32_t be;
        memcpy(&be, a, sizeof(be));
        cfg->mcast_group = ntohl(be);
        cfg->mcast_bits = (unsigned)bits;
      }
      return 0;
    }
  }
  MMP__LOG(MMP__LOG_ERROR,
           "MINIMP_MCAST_GROUP='%s' is not an IPv4 or IPv6 multicast group "
           "or range (e.g. 239.1.2.3, 239.192.0.0/14, ff15::1:2 or "
           "ff15::/16)",
           s);
  return MMP_EENV;
}

/* MINIMP_MCAST (off, on, auto), MINIMP_MCAST_GROUP, MINIMP_MCAST_PORT,
 * MINIMP_MCAST_TIMEOUT_MS, MINIMP_MCAST_SOCKBUF. */
static int env_mcast(mmp__config_t *cfg) {
  static const char *const names[] = {"off", "on", "auto"};
  const char *s = getenv("MINIMP_MCAST_GROUP");
  int rc =
      env_choice("MINIMP_MCAST", names, MMP__ARRAY_SIZE(names), &cfg->mcast);

  rc |= env_uint("MINIMP_MCAST_PORT", 0, 65535, &cfg->mcast_port);
  rc |= env_uint("MINIMP_MCAST_TIMEOUT_MS", 10, 24u * 3600 * 1000,
                 &cfg->mcast_timeout_ms);
  rc |= env_size("MINIMP_MCAST_SOCKBUF", 65536, 1u << 30, &cfg->mcast_sockbuf);
  if (s != NULL && *s != '\0')
    rc |= env_mcast_group(cfg, s);
  return rc;
}

int mmp__config_tuning(mmp__config_t *cfg) {
  const char *s;
  int rc = 0, present;

  cfg->eager_limit = DEF_EAGER_LIMIT;
  cfg->eager_buffer = 0; /* derived from the job size in init */
  cfg->max_frame = DEF_MAX_FRAME;
  cfg->chunk = DEF_CHUNK;
  cfg->window = DEF_WINDOW;
  cfg->spin_us = MMP__SPIN_AUTO;
  cfg->spin_auto = 0;
  cfg->spin_yield = -1;
  cfg->yield_auto = 0;
  cfg->grace_us = DEF_GRACE_US;
  cfg->check_us = 0;
  cfg->check_auto = 0;
  cfg->handshake_ms = DEF_HANDSHAKE_MS;
  cfg->peer_timeout_ms = DEF_PEER_TIMEOUT_MS;
  cfg->max_unexp_rts = DEF_MAX_UNEXP_RTS;
  cfg->boot_timeout_ms = DEF_BOOT_TIMEOUT_MS;
  cfg->connect_eager = 0;
  cfg->encrypt = 0;
  cfg->shm = MMP__SHM_ON;
  cfg->shm_ring = 0;
  cfg->progress_external = 0;
  cfg->mcast = MMP__MCAST_AUTO;
  cfg->mcast_family = 0;
  cfg->mcast_group = DEF_MCAST_GROUP;
  cfg->mcast_bits = DEF_MCAST_BITS;
  memset(cfg->mcast_group6, 0, sizeof(cfg->mcast_group6));
  cfg->mcast_group6[0] = DEF_MCAST_GROUP6_HI;
  cfg->mcast_group6[1] = DEF_MCAST_GROUP6_LO;
  cfg->mcast_bits6 = DEF_MCAST_BITS6;
  cfg->mcast_port = 0;
  cfg->mcast_timeout_ms = DEF_MCAST_TIMEOUT_MS;
  cfg->mcast_sockbuf = DEF_MCAST_SOCKBUF;

  rc |= env_log_level();
  rc |= env_size("MINIMP_EAGER_LIMIT", 0, 1u << 30, &cfg->eager_limit);
  /* Set, it rules every peer; unset, each transport has its own. */
  s = getenv("MINIMP_EAGER_LIMIT");
  cfg->shm_eager_limit =
      s != NULL && *s != '\0' ? cfg->eager_limit : DEF_SHM_EAGER_LIMIT;
  rc |= env_size("MINIMP_EAGER_BUFFER", 4096, 1ull << 32, &cfg->eager_buffer);
  rc |= env_size("MINIMP_MAX_FRAME", 4096, 1ull << 32, &cfg->max_frame);
  rc |= env_size("MINIMP_RNDV_CHUNK", 4096, 1ull << 30, &cfg->chunk);
  rc |= env_size("MINIMP_RNDV_WINDOW", 4096, 1ull << 32, &cfg->window);
  rc |= env_uint("MINIMP_SPIN_US", 0, 10000000, &cfg->spin_us);
  /* 1 or 0; unset leaves the choice to init (spin_yield stays -1). */
  rc |= env_int("MINIMP_SPIN_YIELD", 0, 1, &cfg->spin_yield, &present);
  rc |= env_uint("MINIMP_PROGRESS_GRACE_US", 10, 10000000, &cfg->grace_us);
  rc |= env_uint("MINIMP_PROGRESS_CHECK_US", 100, 10000000, &cfg->check_us);
  rc |=
      env_uint("MINIMP_HANDSHAKE_TIMEOUT_MS", 10, 3600000, &cfg->handshake_ms);
  rc |= env_uint("MINIMP_PEER_TIMEOUT_MS", 0, 3600000, &cfg->peer_timeout_ms);
  rc |= env_uint("MINIMP_MAX_UNEXPECTED_RTS", 1, 1u << 30, &cfg->max_unexp_rts);
  rc |= env_uint("MINIMP_BOOT_TIMEOUT_MS", 100, 3600000, &cfg->boot_timeout_ms);
  s = getenv("MINIMP_CONNECT");
  if (s != NULL && *s != '\0') {
    if (strcmp(s, "eager") == 0) {
      cfg->connect_eager = 1;
    } else if (strcmp(s, "lazy") != 0) {
      MMP__LOG(MMP__LOG_ERROR, "MINIMP_CONNECT='%s' is not lazy or eager", s);
      rc = MMP_EENV;
    }
  }
  /* Off by default: sealing costs a pass over every byte (docs/security.md,
   * docs/data/history/performance.md), and most clusters' networks are trusted.
   */
  rc |= env_int("MINIMP_ENCRYPT", 0, 1, &cfg->encrypt, &present);
  rc |= env_shm(cfg);
  rc |= env_mcast(cfg);
  rc |= env_modes(cfg);
  rc |= mmp__config_coll(&cfg->coll);
  if (rc != 0)
    return MMP_EENV;
  if (cfg->chunk > cfg->max_frame) {
    MMP__LOG(MMP__LOG_ERROR,
             "MINIMP_RNDV_CHUNK (%llu) exceeds MINIMP_MAX_FRAME (%llu)",
             (unsigned long long)cfg->chunk,
             (unsigned long long)cfg->max_frame);
    return MMP_EENV;
  }
  if (cfg->window < cfg->chunk)
    cfg->window = cfg->chunk;
  return 0;
}

void mmp__config_resolve(mmp__config_t *cfg) {
  mmp__config_shared(cfg, cfg->local_size > (int)uv_available_parallelism());
}

void mmp__config_shared(mmp__config_t *cfg, int shared) {
  cfg->cpus_shared = shared;
  if (cfg->check_us == 0 || cfg->check_auto) {
    cfg->check_auto = 1;
    cfg->check_us = shared ? DEF_CHECK_SHARED_US : DEF_CHECK_US;
  }
  /* With a core per rank, a short spin without yielding catches the next
   * frame without a wake-up. With more ranks than CPUs a wake-up costs a
   * context switch and often a migration, so the wait polls longer and
   * yields the CPU every pass, as Open MPI's mpi_yield_when_idle does:
   * runnable peers go first, and the frame is found without a wake-up. */
  if (cfg->spin_yield < 0 || cfg->yield_auto) {
    cfg->yield_auto = 1;
    cfg->spin_yield = shared;
  }
  if (cfg->spin_us == MMP__SPIN_AUTO || cfg->spin_auto) {
    /* Polling that does not yield only steals a shared CPU from a peer. */
    cfg->spin_auto = 1;
    cfg->spin_us = !shared           ? DEF_SPIN_US
                   : cfg->spin_yield ? DEF_SPIN_SHARED_US
                                     : 0;
  }
}

/* The ports a rank started by srun derives its rendezvous port from,
 * unless MINIMP_BOOT_PORTS gives others: below Linux's ephemeral range
 * (32768-60999), so that no outgoing connection holds one by chance. */
#define CONFIG_SLURM_PORT_LO 20000
#define CONFIG_SLURM_PORT_HI 29999

/* Keeps the first host of a Slurm host list and stops the expansion. */
static int config_first_host(void *ctx, const char *name, size_t len) {
  memcpy(ctx, name, len);
  ((char *)ctx)[len] = '\0';
  return 1;
}

/* The first set one of two variables (Slurm spells some both ways). */
static const char *config_env2(const char *a, const char *b) {
  const char *v = getenv(a);

  return v != NULL && *v != '\0' ? v : getenv(b);
}

/* MINIMP_BOOT_PORTS, "LO-HI" within 1024-65535; the default if unset. */
static int config_port_range(long *lo, long *hi) {
  const char *s = getenv("MINIMP_BOOT_PORTS");
  char a[16] = "";
  size_t n;

  *lo = CONFIG_SLURM_PORT_LO;
  *hi = CONFIG_SLURM_PORT_HI;
  if (s == NULL || *s == '\0')
    return 0;
  n = strcspn(s, "-");
  if (n < sizeof(a))
    memcpy(a, s, n), a[n] = '\0';
  if (s[n] != '-' || n >= sizeof(a) || mmp__parse_long(a, 1024, 65535, lo) ||
      mmp__parse_long(s + n + 1, *lo, 65535, hi)) {
    MMP__LOG(MMP__LOG_ERROR,
             "MINIMP_BOOT_PORTS='%s' is not a range LO-HI with 1024 <= LO <= "
             "HI <= 65535",
             s);
    return MMP_EENV;
  }
  return 0;
}

/*
 * A rank started by srun with no MINIMP_BOOT_ADDR: the rendezvous is the
 * step's first node, where srun places rank 0, at a port every task
 * derives alike from SLURM_JOB_ID and SLURM_STEP_ID within the port range,
 * so no port is fixed in advance; jobs close in number, and the first 16
 * steps of one job, get different ports, since those are the steps that
 * run side by side on one node. Writes "host:port" to `out`. Returns 0 or
 * MMP_EENV (reported).
 */
static int config_slurm_boot(char *out, size_t len) {
  const char *nodes = config_env2("SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST");
  const char *job_s = config_env2("SLURM_JOB_ID", "SLURM_JOBID");
  const char *step_s = config_env2("SLURM_STEP_ID", "SLURM_STEPID");
  char host[MMP__HOSTLIST_MAX_NAME + 1] = "", err[400];
  long job, step, lo, hi;
  int rc;

  if (nodes == NULL || job_s == NULL || step_s == NULL) {
    MMP__LOG(MMP__LOG_ERROR,
             "MINIMP_BOOT_ADDR is not set, and Slurm's SLURM_JOB_ID, "
             "SLURM_STEP_ID and SLURM_STEP_NODELIST, which would name the "
             "rendezvous, are not all set either");
    return MMP_EENV;
  }
  if (mmp__parse_long(job_s, 0, 4294967295L, &job) != 0 ||
      mmp__parse_long(step_s, 0, 4294967295L, &step) != 0) {
    MMP__LOG(MMP__LOG_ERROR,
             "SLURM_JOB_ID='%s' or SLURM_STEP_ID='%s' is not "
             "a number",
             job_s, step_s);
    return MMP_EENV;
  }
  if (config_port_range(&lo, &hi) != 0)
    return MMP_EENV;
  rc = mmp__hostlist_expand(nodes, config_first_host, host, err, sizeof(err));
  if (rc != 1) {
    MMP__LOG(MMP__LOG_ERROR, "Slurm's node list: %s", err);
    return MMP_EENV;
  }
  snprintf(
      out, len, strchr(host, ':') != NULL ? "[%s]:%ld" : "%s:%ld", host,
      lo + (long)(((unsigned long long)job * 16u + (unsigned long long)step) %
                  (unsigned long long)(hi - lo + 1)));
  return 0;
}

/* The count of node `node` in a Slurm tasks-per-node list such as
 * "2(x3),1" (counts in node order, "(xN)" repeating one N times) into
 * *out; *uniform: every node has that count. Returns 0, or -1 when the
 * list is malformed or has no such node. */
static int config_tasks_on(const char *list, long node, long *out,
                           int *uniform) {
  const char *p = list;
  long first = -1, at = 0, found = -1;

  *out = -1;
  *uniform = 1;
  while (*p != '\0') {
    long count = 0, times = 1;
    const char *d = p;
    while (*p >= '0' && *p <= '9' && p - d < 8)
      count = count * 10 + (*p++ - '0');
    if (p == d || count < 1)
      return -1;
    if (strncmp(p, "(x", 2) == 0) {
      p += 2;
      d = p;
      for (times = 0; *p >= '0' && *p <= '9' && p - d < 8; p++)
        times = times * 10 + (*p - '0');
      if (p == d || times < 1 || *p++ != ')')
        return -1;
    }
    if (*p == ',' && p[1] != '\0')
      p++;
    else if (*p != '\0')
      return -1;
    if (node >= at && node < at + times)
      found = count;
    *uniform = *uniform && (first < 0 || count == first);
    first = first < 0 ? count : first;
    at += times;
  }
  *out = found;
  return found >= 1 ? 0 : -1;
}

/*
 * A rank srun started: the ranks on its node, from the step's tasks per
 * node (SLURM_STEP_TASKS_PER_NODE, else SLURM_TASKS_PER_NODE) at its
 * node (SLURM_NODEID; not needed where every node has as many). Without
 * them cfg->local_size stays the job's size. `have_lr`: cfg->local_rank
 * came from SLURM_LOCALID, and must be below the count. Returns 0 or
 * MMP_EENV (logged: a list that does not parse or does not hold this
 * node or this rank).
 */
static int config_slurm_local(mmp__config_t *cfg, int have_lr) {
  const char *var = "SLURM_STEP_TASKS_PER_NODE";
  const char *list = getenv(var), *ids = getenv("SLURM_NODEID");
  int known = ids != NULL && *ids != '\0', uniform;
  long node = 0, count;

  if (list == NULL || *list == '\0')
    list = getenv(var = "SLURM_TASKS_PER_NODE");
  if (list == NULL || *list == '\0')
    return 0;
  if (known && mmp__parse_long(ids, 0, (1L << 24) - 1, &node) != 0) {
    MMP__LOG(MMP__LOG_ERROR, "SLURM_NODEID='%s' is not a node number", ids);
    return MMP_EENV;
  }
  if (config_tasks_on(list, node, &count, &uniform) == 0 && !known && !uniform)
    return 0; /* unequal counts, and which node is ours it does not say */
  if (count < 1 || count > cfg->size || (have_lr && cfg->local_rank >= count)) {
    MMP__LOG(MMP__LOG_ERROR,
             "%s='%s' does not give a task count for node %ld "
             "(SLURM_NODEID) of at most SLURM_NTASKS=%d%s: it should "
             "list counts in node order, such as \"2(x3),1\"",
             var, list, node, cfg->size,
             have_lr ? " and above SLURM_LOCALID" : "");
    return MMP_EENV;
  }
  cfg->local_size = (int)count;
  return 0;
}

int mmp__config_identity(mmp__config_t *cfg) {
  int have_rank, have_size, have_lr, have_ls, rc = 0;
  const char *boot = getenv("MINIMP_BOOT_ADDR");
  const char *key = getenv("MINIMP_JOB_KEY");
  const char *iface = getenv("MINIMP_IFACE");
  const char *rank_var = "MINIMP_RANK", *size_var = "MINIMP_SIZE";

  char derived[sizeof(cfg->boot_addr)];

  if (getenv("MINIMP_RANK") == NULL && getenv("MINIMP_SIZE") == NULL &&
      getenv("SLURM_PROCID") != NULL && getenv("SLURM_NTASKS") != NULL &&
      (boot != NULL || key != NULL)) {
    /* Launched by srun: Slurm names the rank, and the rendezvous is the
     * user's or derived from the step. */
    rank_var = "SLURM_PROCID";
    size_var = "SLURM_NTASKS";
    if (boot == NULL) {
      if (config_slurm_boot(derived, sizeof(derived)) != 0)
        return MMP_EENV;
      boot = derived;
      cfg->boot_derived = 1;
    }
  }
  rc |= env_int(size_var, 1, 1 << 24, &cfg->size, &have_size);
  rc |= env_int(rank_var, 0, (1 << 24) - 1, &cfg->rank, &have_rank);
  if (rc != 0)
    return MMP_EENV;
  if (!have_rank && !have_size && boot == NULL && key == NULL) {
    cfg->singleton = 1;
    cfg->rank = 0;
    cfg->size = 1;
    cfg->local_rank = 0;
    cfg->local_size = 1;
    return 0;
  }
  if (!have_rank || !have_size || boot == NULL || *boot == '\0') {
    MMP__LOG(MMP__LOG_ERROR,
             "incomplete job environment: %s, %s and MINIMP_BOOT_ADDR must "
             "all be set (run the program with minimprun)",
             rank_var, size_var);
    return MMP_EENV;
  }
  if (cfg->rank >= cfg->size) {
    MMP__LOG(MMP__LOG_ERROR, "%s=%d is not below %s=%d", rank_var, cfg->rank,
             size_var, cfg->size);
    return MMP_EENV;
  }
  /* The key is a secret: the message gives its length, never its text. */
  if (key == NULL) {
    MMP__LOG(MMP__LOG_ERROR,
             "MINIMP_JOB_KEY is not set (minimprun sets it; an embedding "
             "tool passes the job key to mmp_init_ex)");
    return MMP_EENV;
  }
  if (mmp__hex_decode(key, cfg->key, MMP__JOB_KEY_LEN) != 0) {
    MMP__LOG(MMP__LOG_ERROR,
             "MINIMP_JOB_KEY must be %d hex digits (it has %zu characters%s)",
             2 * MMP__JOB_KEY_LEN, strlen(key),
             strlen(key) == 2 * MMP__JOB_KEY_LEN ? ", not all hex" : "");
    return MMP_EENV;
  }
  if (strlen(boot) >= sizeof(cfg->boot_addr)) {
    MMP__LOG(MMP__LOG_ERROR, "MINIMP_BOOT_ADDR is too long");
    return MMP_EENV;
  }
  strcpy(cfg->boot_addr, boot);
  cfg->local_rank = cfg->rank;
  cfg->local_size = cfg->size;
  rc |= env_int("MINIMP_LOCAL_RANK", 0, (1 << 24) - 1, &cfg->local_rank,
                &have_lr);
  rc |= env_int("MINIMP_LOCAL_SIZE", 1, 1 << 24, &cfg->local_size, &have_ls);
  if (!have_lr && getenv("SLURM_LOCALID") != NULL)
    rc |=
        env_int("SLURM_LOCALID", 0, (1 << 24) - 1, &cfg->local_rank, &have_lr);
  /* Not the job's size: that would take every rank for this host's and
   * choose waits for an oversubscribed machine (mmp__config_resolve). */
  if (rc == 0 && !have_ls && strcmp(rank_var, "SLURM_PROCID") == 0)
    rc = config_slurm_local(cfg, have_lr);
  if (rc != 0)
    return MMP_EENV;
  {
    /* MINIMP_BOOT_HOST=1: rank 0 serves the rendezvous itself, for
     * launchers that start every rank alike (srun). */
    const char *host = getenv("MINIMP_BOOT_HOST");
    if (host != NULL && *host != '\0') {
      if (strcmp(host, "1") != 0 && strcmp(host, "0") != 0) {
        MMP__LOG(MMP__LOG_ERROR, "MINIMP_BOOT_HOST='%s' is not 0 or 1", host);
        return MMP_EENV;
      }
      cfg->host_boot = host[0] == '1' && cfg->rank == 0;
    } else if (cfg->boot_derived) {
      cfg->host_boot = cfg->rank == 0; /* nobody else can serve it */
    }
  }
  if (iface != NULL) {
    if (strlen(iface) >= sizeof(cfg->iface)) {
      MMP__LOG(MMP__LOG_ERROR, "MINIMP_IFACE is too long");
      return MMP_EENV;
    }
    strcpy(cfg->iface, iface);
  }
  return 0;
}
