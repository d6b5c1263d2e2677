/* SPDX-License-Identifier: MIT */
/*
 * Fuzz harness: the runtime's environment (runtime/config.c and the number
 * parsers of transport/util.c): every MINIMP_* tuning variable of
 * docs/design/protocols.md, the job identity minimprun or Slurm exports, and
 * the automatic choices that depend on whether ranks share CPUs.
 *
 * Input: a flags byte (bit 0: more ranks than CPUs), then records of one
 * byte naming a variable and a u16-counted value (cut at its first NUL, as
 * an environment value is). A variable named twice keeps the last value.
 *
 * The harness computes, from docs/design/protocols.md alone, what each value
 * must give: a size is decimal digits with one optional k/m/g suffix
 * (binary) that fits 64 bits; an integer is what strtol reads whole; each
 * variable has its documented range. Invariants:
 *  - mmp__config_tuning fails (MMP_EENV) exactly when a set variable is
 *    malformed or out of range, or the values conflict (chunk above the
 *    maximum frame, a ring that is not a power of two, half a network
 *    model); otherwise every field is the value given or its default
 * (MINIMP_ENCRYPT too: 0 or 1, off by default);
 *  - the automatic spin, yield and check choices follow docs/design/progress.md
 *    and never override a value the user set;
 *  - mmp__config_identity accepts a job of one without any variable, or a
 *    rank below the size with a 32-hex-digit key and a rendezvous address,
 *    and takes each from the variable that names it (MINIMP_* first, then
 *    Slurm's); anything else is MMP_EENV.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "minimp.h"
#include "runtime/internal.h"
#include "transport/hostlist.h"

/* config.c applies MINIMP_ERRORS=fatal through the public call, which
 * lives in runtime/errors.c with the rest of the library (not linked into
 * this harness): here it only records the mode. */
static volatile int errors_fatal = -1;

int mmp_set_errors_fatal(int on) {
  errors_fatal = on != 0;
  return 0;
}

enum { K_SIZE, K_UINT, K_INT, K_DOUBLE, K_WORD, K_TEXT, K_GROUP };

typedef struct cfg_var_s {
  const char *name;
  int kind;
  double min, max;   /* K_SIZE, K_UINT, K_INT, K_DOUBLE */
  const char *words; /* K_WORD: the accepted values, space-separated */
} cfg_var_t;

static const cfg_var_t cfg_vars[] = {
    {"MINIMP_EAGER_LIMIT", K_SIZE, 0, 1u << 30, NULL},
    {"MINIMP_EAGER_BUFFER", K_SIZE, 4096, 4294967296.0, NULL},
    {"MINIMP_MAX_FRAME", K_SIZE, 4096, 4294967296.0, NULL},
    {"MINIMP_RNDV_CHUNK", K_SIZE, 4096, 1u << 30, NULL},
    {"MINIMP_RNDV_WINDOW", K_SIZE, 4096, 4294967296.0, NULL},
    {"MINIMP_SHM_RING", K_SIZE, 4096, 1u << 30, NULL},
    {"MINIMP_BCAST_SYM_MIN", K_SIZE, 0, 1099511627776.0, NULL},
    {"MINIMP_BCAST_ARRIVAL_WINDOW_US", K_SIZE, 0, 3600e6, NULL},
    {"MINIMP_SPIN_US", K_UINT, 0, 10000000, NULL},
    {"MINIMP_PROGRESS_GRACE_US", K_UINT, 10, 10000000, NULL},
    {"MINIMP_PROGRESS_CHECK_US", K_UINT, 100, 10000000, NULL},
    {"MINIMP_HANDSHAKE_TIMEOUT_MS", K_UINT, 10, 3600000, NULL},
    {"MINIMP_PEER_TIMEOUT_MS", K_UINT, 0, 3600000, NULL},
    {"MINIMP_BOOT_TIMEOUT_MS", K_UINT, 100, 3600000, NULL},
    {"MINIMP_SPIN_YIELD", K_INT, 0, 1, NULL},
    {"MINIMP_NET_SHARED_CPUS", K_INT, 0, 1, NULL},
    {"MINIMP_NET_ALPHA_US", K_DOUBLE, 1e-3, 1e9, NULL},
    {"MINIMP_NET_BETA_NS", K_DOUBLE, 1e-6, 1e9, NULL},
    {"MINIMP_NET_BURST_BYTES", K_DOUBLE, 0, 1e15, NULL},
    {"MINIMP_NET_GAMMA_NS", K_DOUBLE, 0, 1e6, NULL},
    {"MINIMP_NET_NODE_ALPHA_US", K_DOUBLE, 1e-3, 1e9, NULL},
    {"MINIMP_NET_NODE_BETA_NS", K_DOUBLE, 1e-6, 1e9, NULL},
    {"MINIMP_LOG", K_WORD, 0, 0, "error warn info debug"},
    {"MINIMP_CONNECT", K_WORD, 0, 0, "lazy eager"},
    {"MINIMP_SHM", K_WORD, 0, 0, "off on ring"},
    {"MINIMP_ENCRYPT", K_INT, 0, 1, NULL}, /* seal every TCP frame */
    /* The identity: checked by their own rules below. */
    {"MINIMP_RANK", K_INT, 0, (1 << 24) - 1, NULL},
    {"MINIMP_SIZE", K_INT, 1, 1 << 24, NULL},
    {"SLURM_PROCID", K_INT, 0, (1 << 24) - 1, NULL},
    {"SLURM_NTASKS", K_INT, 1, 1 << 24, NULL},
    {"MINIMP_LOCAL_RANK", K_INT, 0, (1 << 24) - 1, NULL},
    {"MINIMP_LOCAL_SIZE", K_INT, 1, 1 << 24, NULL},
    {"SLURM_LOCALID", K_INT, 0, (1 << 24) - 1, NULL},
    {"MINIMP_BOOT_ADDR", K_TEXT, 0, 0, NULL},
    {"MINIMP_JOB_KEY", K_TEXT, 0, 0, NULL},
    {"MINIMP_IFACE", K_TEXT, 0, 0, NULL},
    {"MINIMP_BOOT_HOST", K_WORD, 0, 0, "0 1"},
    /* What a rank started by srun derives its rendezvous from. */
    {"SLURM_STEP_NODELIST", K_TEXT, 0, 0, NULL},
    {"SLURM_JOB_NODELIST", K_TEXT, 0, 0, NULL},
    {"SLURM_JOB_ID", K_TEXT, 0, 0, NULL},
    {"SLURM_JOBID", K_TEXT, 0, 0, NULL},
    {"SLURM_STEP_ID", K_TEXT, 0, 0, NULL},
    {"SLURM_STEPID", K_TEXT, 0, 0, NULL},
    {"MINIMP_BOOT_PORTS", K_TEXT, 0, 0, NULL},
    /* More tuning, after the identity so that the corpus's variable
     * numbers keep their meaning. */
    {"MINIMP_MAX_UNEXPECTED_RTS", K_UINT, 1, 1u << 30, NULL},
    {"MINIMP_MCAST", K_WORD, 0, 0, "off on auto"},
    {"MINIMP_MCAST_PORT", K_UINT, 0, 65535, NULL},
    {"MINIMP_MCAST_TIMEOUT_MS", K_UINT, 10, 24u * 3600 * 1000, NULL},
    {"MINIMP_MCAST_SOCKBUF", K_SIZE, 65536, 1u << 30, NULL},
    {"MINIMP_MCAST_GROUP", K_GROUP, 0, 0, NULL},
    {"MINIMP_COLL_TIMEOUT_MS", K_UINT, 0, 24u * 3600 * 1000, NULL},
    {"MINIMP_NET_GAP_US", K_DOUBLE, 0, 1e9, NULL},
    {"MINIMP_PROGRESS", K_WORD, 0, 0, "thread external"},
    {"MINIMP_ERRORS", K_WORD, 0, 0, "return fatal"},
};

#define CFG_NVARS (sizeof(cfg_vars) / sizeof(cfg_vars[0]))
#define CFG_NTUNING 26 /* the entries up to MINIMP_ENCRYPT */
#define CFG_NLATE 10   /* the tuning entries after the identity */

/* What the harness expects of one variable. */
typedef struct cfg_want_s {
  const char *s; /* the value, or NULL when unset */
  int present;   /* set and not empty */
  int ok;        /* well formed and in range (or absent) */
  double num;    /* its number (K_SIZE as an exact integer below 2^53 or
                    compared through `u`) */
  uint64_t u;
  int word;         /* K_WORD: index in words */
  int family;       /* K_GROUP: AF_INET or AF_INET6 */
  uint8_t addr[16]; /* K_GROUP: the group, network order */
} cfg_want_t;

static int cfg_find(const char *name) {
  size_t i;

  for (i = 0; i < CFG_NVARS; i++)
    if (strcmp(cfg_vars[i].name, name) == 0)
      return (int)i;
  abort();
}

/* Decimal digits and one optional k/m/g (any case), fitting 64 bits. */
static int cfg_ref_size(const char *s, uint64_t *out) {
  uint64_t v = 0, mult = 1;

  if (*s < '0' || *s > '9')
    return 0;
  for (; *s >= '0' && *s <= '9'; s++) {
    if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
      return 0;
    v = v * 10 + (uint64_t)(*s - '0');
  }
  if (*s == 'k' || *s == 'K')
    mult = 1024;
  else if (*s == 'm' || *s == 'M')
    mult = 1024 * 1024;
  else if (*s == 'g' || *s == 'G')
    mult = 1024 * 1024 * 1024;
  if (mult > 1)
    s++;
  if (*s != '\0' || v > UINT64_MAX / mult)
    return 0;
  *out = v * mult;
  return 1;
}

/* What strtol reads whole: white space, a sign, decimal digits. */
static int cfg_ref_long(const char *s, long *out) {
  long v = 0;
  int neg = 0, digits = 0;

  while (*s == ' ' || (*s >= '\t' && *s <= '\r'))
    s++;
  if (*s == '+' || *s == '-')
    neg = *s++ == '-';
  for (; *s >= '0' && *s <= '9'; s++, digits++) {
    if (v > 100000000000L) /* far outside every range here */
      return 0;
    v = v * 10 + (*s - '0');
  }
  if (digits == 0 || *s != '\0')
    return 0;
  *out = neg ? -v : v;
  return 1;
}

/* A multicast group or range (docs/design/transport.md): an IPv4 address in
 * 224.0.0.0/4 or an IPv6 one in ff00::/8, optionally "/n" with n from
 * 4 to 32 (IPv4) or 8 to 128 (IPv6) as strtol reads it whole. */
static int cfg_ref_group(const char *s, cfg_want_t *w) {
  const char *slash = strchr(s, '/');
  size_t n = slash != NULL ? (size_t)(slash - s) : strlen(s);
  char addr[64];
  long bits;

  w->family = memchr(s, ':', n) != NULL ? AF_INET6 : AF_INET;
  bits = w->family == AF_INET6 ? 128 : 32;
  if (n >= sizeof(addr))
    return 0;
  if (slash != NULL && (!cfg_ref_long(slash + 1, &bits) ||
                        bits < (w->family == AF_INET6 ? 8 : 4) ||
                        bits > (w->family == AF_INET6 ? 128 : 32)))
    return 0;
  memcpy(addr, s, n);
  addr[n] = '\0';
  if (inet_pton(w->family, addr, w->addr) != 1)
    return 0;
  w->u = (uint64_t)bits;
  return w->family == AF_INET6 ? w->addr[0] == 0xff : w->addr[0] >> 4 == 0xe;
}

static void cfg_expect(const cfg_var_t *v, cfg_want_t *w) {
  long l = 0;
  char *end;

  w->s = getenv(v->name);
  w->present = w->s != NULL && w->s[0] != '\0';
  w->ok = 1;
  if (!w->present)
    return;
  switch (v->kind) {
  case K_SIZE:
    w->ok = cfg_ref_size(w->s, &w->u) && (double)w->u >= v->min &&
            (double)w->u <= v->max;
    break;
  case K_UINT:
  case K_INT:
    w->ok = cfg_ref_long(w->s, &l) && l >= v->min && l <= v->max;
    w->u = (uint64_t)l;
    break;
  case K_DOUBLE:
    w->num = strtod(w->s, &end);
    w->ok = end != w->s && *end == '\0' && w->num >= v->min && w->num <= v->max;
    break;
  case K_WORD: {
    const char *p = v->words;
    size_t n = strlen(w->s);
    w->ok = 0;
    for (w->word = 0; *p != '\0'; w->word++) {
      size_t len = strcspn(p, " ");
      if (len == n && strncmp(p, w->s, n) == 0) {
        w->ok = 1;
        break;
      }
      p += len + (p[len] == ' ');
    }
    break;
  }
  case K_GROUP:
    w->ok = cfg_ref_group(w->s, w);
    break;
  default:
    break;
  }
}

/* ---- Tuning ----------------------------------------------------------------
 */

#define W(name) (&want[cfg_find(name)])

static uint64_t cfg_size_or(const cfg_want_t *w, uint64_t dflt) {
  return w->present ? w->u : dflt;
}

static double cfg_num_or(const cfg_want_t *w, double dflt) {
  return w->present ? w->num : dflt;
}

/* The multicast channel's settings; the default ranges are 239.0.0.0/8
 * and ff15::/16, in which the job's group is derived, and a group given
 * replaces only its own family's. */
static void cfg_check_mcast(const mmp__config_t *cfg, const cfg_want_t *want) {
  static const uint8_t dflt6[16] = {0xff, 0x15};
  const cfg_want_t *g = W("MINIMP_MCAST_GROUP");
  int v4 = g->present && g->family == AF_INET;
  int v6 = g->present && g->family == AF_INET6;
  uint32_t be;

  FUZZ_CHECK(cfg->mcast == (W("MINIMP_MCAST")->present ? W("MINIMP_MCAST")->word
                                                       : 2 /* auto */));
  FUZZ_CHECK(cfg->mcast_port == cfg_size_or(W("MINIMP_MCAST_PORT"), 0));
  FUZZ_CHECK(cfg->mcast_timeout_ms ==
             cfg_size_or(W("MINIMP_MCAST_TIMEOUT_MS"), 10000));
  FUZZ_CHECK(cfg->mcast_sockbuf ==
             cfg_size_or(W("MINIMP_MCAST_SOCKBUF"), 8u << 20));
  FUZZ_CHECK(cfg->mcast_family == (g->present ? g->family : 0));
  memcpy(&be, g->addr, sizeof(be));
  FUZZ_CHECK(cfg->mcast_group == (v4 ? ntohl(be) : 0xef000000u));
  FUZZ_CHECK(cfg->mcast_bits == (v4 ? g->u : 8));
  FUZZ_CHECK(memcmp(cfg->mcast_group6, v6 ? g->addr : dflt6, 16) == 0);
  FUZZ_CHECK(cfg->mcast_bits6 == (v6 ? g->u : 16));
}

static void cfg_check_tuning(const cfg_want_t *want, int shared) {
  mmp__config_t cfg;
  int rc, expect_ok = 1, i;
  uint64_t chunk, frame, ring, window;

  FUZZ_CHECK(strcmp(cfg_vars[CFG_NTUNING - 1].name, "MINIMP_ENCRYPT") == 0);
  for (i = 0; i < CFG_NTUNING; i++)
    expect_ok &= want[i].ok;
  for (i = CFG_NVARS - CFG_NLATE; i < (int)CFG_NVARS; i++)
    expect_ok &= want[i].ok;
  chunk = cfg_size_or(W("MINIMP_RNDV_CHUNK"), 512u * 1024);
  frame = cfg_size_or(W("MINIMP_MAX_FRAME"), 64u << 20);
  ring = cfg_size_or(W("MINIMP_SHM_RING"), 0);
  window = cfg_size_or(W("MINIMP_RNDV_WINDOW"), 2u << 20);
  if (expect_ok && (ring & (ring - 1)) != 0)
    expect_ok = 0;
  if (expect_ok &&
      W("MINIMP_NET_ALPHA_US")->present != W("MINIMP_NET_BETA_NS")->present)
    expect_ok = 0;
  if (expect_ok && chunk > frame)
    expect_ok = 0;
  /* The links within a node: both or neither, and only beside the links
   * between nodes. */
  if (expect_ok && (W("MINIMP_NET_NODE_ALPHA_US")->present !=
                        W("MINIMP_NET_NODE_BETA_NS")->present ||
                    (W("MINIMP_NET_NODE_ALPHA_US")->present &&
                     !W("MINIMP_NET_ALPHA_US")->present)))
    expect_ok = 0;

  memset(&cfg, 0xa5, sizeof(cfg));
  mmp__log_level = MMP__LOG_WARN;
  errors_fatal = -1;
  rc = mmp__config_tuning(&cfg);
  FUZZ_CHECK(rc == 0 || rc == MMP_EENV);
  FUZZ_CHECK((rc == 0) == expect_ok);
  /* MINIMP_LOG applies as soon as it is read, right or not. */
  FUZZ_CHECK(mmp__log_level == (W("MINIMP_LOG")->present && W("MINIMP_LOG")->ok
                                    ? W("MINIMP_LOG")->word
                                    : MMP__LOG_WARN));
  mmp__log_level = -1;
  /* So does MINIMP_ERRORS. */
  FUZZ_CHECK(errors_fatal ==
             (W("MINIMP_ERRORS")->present && W("MINIMP_ERRORS")->ok
                  ? W("MINIMP_ERRORS")->word
                  : -1));
  if (rc != 0)
    return;

  FUZZ_CHECK(cfg.eager_limit ==
             cfg_size_or(W("MINIMP_EAGER_LIMIT"), 60 * 1024));
  FUZZ_CHECK(cfg.shm_eager_limit ==
             cfg_size_or(W("MINIMP_EAGER_LIMIT"), 128 * 1024));
  FUZZ_CHECK(cfg.eager_buffer == cfg_size_or(W("MINIMP_EAGER_BUFFER"), 0));
  FUZZ_CHECK(cfg.max_frame == frame && cfg.chunk == chunk);
  FUZZ_CHECK(cfg.chunk <= cfg.max_frame);
  FUZZ_CHECK(cfg.window == (window > chunk ? window : chunk));
  FUZZ_CHECK(cfg.shm_ring == ring);
  FUZZ_CHECK(cfg.shm ==
             (W("MINIMP_SHM")->present ? W("MINIMP_SHM")->word : MMP__SHM_ON));
  FUZZ_CHECK(cfg.connect_eager ==
             (W("MINIMP_CONNECT")->present && W("MINIMP_CONNECT")->word == 1));
  FUZZ_CHECK(cfg.encrypt == (int)cfg_size_or(W("MINIMP_ENCRYPT"), 0));
  FUZZ_CHECK(cfg.grace_us == cfg_size_or(W("MINIMP_PROGRESS_GRACE_US"), 1000));
  FUZZ_CHECK(cfg.handshake_ms ==
             cfg_size_or(W("MINIMP_HANDSHAKE_TIMEOUT_MS"), 10000));
  FUZZ_CHECK(cfg.peer_timeout_ms ==
             cfg_size_or(W("MINIMP_PEER_TIMEOUT_MS"), 8000));
  FUZZ_CHECK(cfg.boot_timeout_ms ==
             cfg_size_or(W("MINIMP_BOOT_TIMEOUT_MS"), 60000));
  FUZZ_CHECK(cfg.coll.bcast_sym_min ==
             (W("MINIMP_BCAST_SYM_MIN")->present
                  ? (int64_t)W("MINIMP_BCAST_SYM_MIN")->u
                  : -1));
  FUZZ_CHECK(cfg.coll.arrival_window_us ==
             (W("MINIMP_BCAST_ARRIVAL_WINDOW_US")->present
                  ? (int64_t)W("MINIMP_BCAST_ARRIVAL_WINDOW_US")->u
                  : -1));
  FUZZ_CHECK(cfg.coll.net_profile == W("MINIMP_NET_ALPHA_US")->present);
  FUZZ_CHECK(cfg.coll.net_alpha_us == cfg_num_or(W("MINIMP_NET_ALPHA_US"), 0));
  FUZZ_CHECK(cfg.coll.net_beta_ns == cfg_num_or(W("MINIMP_NET_BETA_NS"), 0));
  FUZZ_CHECK(cfg.coll.net_burst == cfg_num_or(W("MINIMP_NET_BURST_BYTES"), 0));
  FUZZ_CHECK(cfg.coll.net_gamma_ns == cfg_num_or(W("MINIMP_NET_GAMMA_NS"), -1));
  FUZZ_CHECK(cfg.coll.net_node_alpha_us ==
             cfg_num_or(W("MINIMP_NET_NODE_ALPHA_US"), -1));
  FUZZ_CHECK(cfg.coll.net_node_beta_ns ==
             cfg_num_or(W("MINIMP_NET_NODE_BETA_NS"), -1));
  FUZZ_CHECK(cfg.coll.net_shared ==
             (int)cfg_size_or(W("MINIMP_NET_SHARED_CPUS"), 0));
  FUZZ_CHECK(cfg.coll.net_gap_us == cfg_num_or(W("MINIMP_NET_GAP_US"), 0));
  FUZZ_CHECK(cfg.coll.timeout_ms ==
             cfg_size_or(W("MINIMP_COLL_TIMEOUT_MS"), 0));
  FUZZ_CHECK(cfg.progress_external == (W("MINIMP_PROGRESS")->present &&
                                       W("MINIMP_PROGRESS")->word == 1));
  FUZZ_CHECK(cfg.max_unexp_rts ==
             cfg_size_or(W("MINIMP_MAX_UNEXPECTED_RTS"), 65536));
  cfg_check_mcast(&cfg, want);

  /* The automatic choices (docs/design/progress.md), twice: a second call, as
   * when init learns more, must not take the user's values for its own. */
  for (i = 0; i < 2; i++) {
    int sh = i == 0 ? shared : !shared;
    int yield =
        W("MINIMP_SPIN_YIELD")->present ? (int)W("MINIMP_SPIN_YIELD")->u : sh;
    mmp__config_shared(&cfg, sh);
    FUZZ_CHECK(cfg.cpus_shared == sh);
    FUZZ_CHECK(cfg.spin_yield == yield);
    FUZZ_CHECK(cfg.check_us ==
               cfg_size_or(W("MINIMP_PROGRESS_CHECK_US"), sh ? 64000 : 4000));
    FUZZ_CHECK(cfg.spin_us == cfg_size_or(W("MINIMP_SPIN_US"), !sh     ? 50
                                                               : yield ? 1000
                                                                       : 0));
  }
}

/* ---- Identity
 * ---------------------------------------------------------------- */

static int cfg_hex_ok(const char *s, uint8_t key[MMP__JOB_KEY_LEN]) {
  int i;

  if (s == NULL || strlen(s) != 2 * MMP__JOB_KEY_LEN)
    return 0;
  for (i = 0; i < 2 * MMP__JOB_KEY_LEN; i++) {
    char c = s[i];
    int d = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : -1;
    if (d < 0)
      return 0;
    key[i / 2] = (uint8_t)(i % 2 == 0 ? d << 4 : key[i / 2] | d);
  }
  return 1;
}

/* The first set one of two variables, as Slurm spells some both ways. */
static const char *cfg_env2(const cfg_want_t *want, const char *a,
                            const char *b) {
  return W(a)->present ? W(a)->s : W(b)->s;
}

static int cfg_first_host(void *ctx, const char *name, size_t len) {
  memcpy(ctx, name, len);
  ((char *)ctx)[len] = '\0';
  return 1;
}

/* The rendezvous a rank started by srun derives (docs/embedding.md): the
 * step's first node, at LO + (job * 16 + step) mod (HI - LO + 1) within
 * MINIMP_BOOT_PORTS (default 20000-29999). Returns 0 or -1. */
static int cfg_derived_boot(const cfg_want_t *want, char *out, size_t len) {
  const char *nodes =
      cfg_env2(want, "SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST");
  const char *job_s = cfg_env2(want, "SLURM_JOB_ID", "SLURM_JOBID");
  const char *step_s = cfg_env2(want, "SLURM_STEP_ID", "SLURM_STEPID");
  const char *ports = W("MINIMP_BOOT_PORTS")->s;
  char host[MMP__HOSTLIST_MAX_NAME + 1], lo_s[16], err[400];
  long job, step, lo = 20000, hi = 29999;
  size_t n;

  if (nodes == NULL || job_s == NULL || step_s == NULL ||
      !cfg_ref_long(job_s, &job) || job < 0 || job > 4294967295L ||
      !cfg_ref_long(step_s, &step) || step < 0 || step > 4294967295L)
    return -1;
  if (ports != NULL && ports[0] != '\0') {
    n = strcspn(ports, "-");
    if (n >= sizeof(lo_s) || ports[n] != '-')
      return -1;
    memcpy(lo_s, ports, n);
    lo_s[n] = '\0';
    if (!cfg_ref_long(lo_s, &lo) || lo < 1024 || lo > 65535 ||
        !cfg_ref_long(ports + n + 1, &hi) || hi < lo || hi > 65535)
      return -1;
  }
  if (mmp__hostlist_expand(nodes, cfg_first_host, host, err, sizeof(err)) != 1)
    return -1;
  snprintf(
      out, len, strchr(host, ':') != NULL ? "[%s]:%ld" : "%s:%ld", host,
      lo + (long)(((unsigned long long)job * 16u + (unsigned long long)step) %
                  (unsigned long long)(hi - lo + 1)));
  return 0;
}

static void cfg_check_identity(const cfg_want_t *want) {
  const cfg_want_t *rank = W("MINIMP_RANK"), *size = W("MINIMP_SIZE");
  const cfg_want_t *boot = W("MINIMP_BOOT_ADDR"), *key = W("MINIMP_JOB_KEY");
  const cfg_want_t *lr = W("MINIMP_LOCAL_RANK"), *ls = W("MINIMP_LOCAL_SIZE");
  const cfg_want_t *host = W("MINIMP_BOOT_HOST"), *iface = W("MINIMP_IFACE");
  mmp__config_t cfg;
  uint8_t k[MMP__JOB_KEY_LEN];
  int rc, ok, lrank, lsize, derived = 0;
  char dboot[300];
  cfg_want_t dw;

  memset(&cfg, 0, sizeof(cfg));
  rc = mmp__config_identity(&cfg);
  FUZZ_CHECK(rc == 0 || rc == MMP_EENV);
  if (rank->s == NULL && size->s == NULL && W("SLURM_PROCID")->s != NULL &&
      W("SLURM_NTASKS")->s != NULL && (boot->s != NULL || key->s != NULL)) {
    rank = W("SLURM_PROCID");
    size = W("SLURM_NTASKS");
    if (boot->s == NULL) {
      if (cfg_derived_boot(want, dboot, sizeof(dboot)) != 0) {
        FUZZ_CHECK(rc == MMP_EENV);
        return;
      }
      memset(&dw, 0, sizeof(dw));
      dw.s = dboot;
      dw.present = dw.ok = 1;
      boot = &dw;
      derived = 1;
    }
  }
  if (!rank->ok || !size->ok) {
    FUZZ_CHECK(rc == MMP_EENV);
    return;
  }
  if (!rank->present && !size->present && boot->s == NULL && key->s == NULL) {
    FUZZ_CHECK(rc == 0 && cfg.singleton && cfg.rank == 0 && cfg.size == 1 &&
               cfg.local_rank == 0 && cfg.local_size == 1);
    return;
  }
  lrank = lr->present ? (int)lr->u : (int)rank->u;
  if (!lr->present && W("SLURM_LOCALID")->s != NULL) {
    const cfg_want_t *id = W("SLURM_LOCALID");
    if (!id->ok)
      lrank = -1;
    else if (id->present)
      lrank = (int)id->u;
  }
  lsize = ls->present ? (int)ls->u : (int)size->u;
  ok = rank->present && size->present && boot->present && rank->u < size->u &&
       cfg_hex_ok(key->s, k) && strlen(boot->s) < 256 && lr->ok && ls->ok &&
       lrank >= 0 && host->ok && (iface->s == NULL || strlen(iface->s) < 128);
  FUZZ_CHECK((rc == 0) == ok);
  if (rc != 0)
    return;
  FUZZ_CHECK(!cfg.singleton && cfg.rank == (int)rank->u &&
             cfg.size == (int)size->u && cfg.rank < cfg.size);
  FUZZ_CHECK(memcmp(cfg.key, k, sizeof(k)) == 0);
  FUZZ_CHECK(strcmp(cfg.boot_addr, boot->s) == 0);
  FUZZ_CHECK(cfg.local_rank == lrank && cfg.local_size == lsize);
  FUZZ_CHECK(cfg.boot_derived == derived);
  FUZZ_CHECK(cfg.host_boot ==
             ((host->present ? host->word == 1 : derived) && cfg.rank == 0));
  FUZZ_CHECK(strcmp(cfg.iface, iface->s != NULL ? iface->s : "") == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  cfg_want_t want[CFG_NVARS];
  fuzz_in_t in;
  char value[1024];
  int flags;
  size_t i;

  mmp__log_level = -1;
  for (i = 0; i < CFG_NVARS; i++)
    unsetenv(cfg_vars[i].name);
  fuzz_in_init(&in, data, size);
  flags = fuzz_u8(&in);
  while (in.left > 0) {
    const cfg_var_t *v = &cfg_vars[fuzz_below(&in, CFG_NVARS)];
    const uint8_t *p;
    size_t n = fuzz_bytes(&in, &p, sizeof(value) - 1);
    memcpy(value, p, n);
    value[n] = '\0';
    setenv(v->name, value, 1);
  }
  memset(want, 0, sizeof(want));
  for (i = 0; i < CFG_NVARS; i++)
    cfg_expect(&cfg_vars[i], &want[i]);
  cfg_check_tuning(want, flags & 1);
  cfg_check_identity(want);
  for (i = 0; i < CFG_NVARS; i++)
    unsetenv(cfg_vars[i].name);
  return 0;
}

/* ---- Seeds -----------------------------------------------------------------
 */

static void cfg_put(fuzz_buf_t *b, const char *name, const char *value) {
  fuzz_buf_u8(b, (uint8_t)cfg_find(name));
  fuzz_buf_bytes(b, value, strlen(value));
}

static void cfg_emit(fuzz_emit_fn emit, const char *name, fuzz_buf_t *b) {
  emit(name, b->p, b->len);
  b->len = 0;
  fuzz_buf_u8(b, 0);
}

void fuzz_seeds(fuzz_emit_fn emit) {
  fuzz_buf_t b = {0};

  fuzz_buf_u8(&b, 0);
  cfg_emit(emit, "nothing-set", &b);
  cfg_put(&b, "MINIMP_EAGER_LIMIT", "64k");
  cfg_put(&b, "MINIMP_EAGER_BUFFER", "1M");
  cfg_put(&b, "MINIMP_MAX_FRAME", "4g");
  cfg_put(&b, "MINIMP_RNDV_CHUNK", "1g");
  cfg_put(&b, "MINIMP_RNDV_WINDOW", "4096");
  cfg_put(&b, "MINIMP_SHM_RING", "4k");
  cfg_put(&b, "MINIMP_SHM", "ring");
  cfg_put(&b, "MINIMP_CONNECT", "eager");
  cfg_put(&b, "MINIMP_LOG", "debug");
  cfg_put(&b, "MINIMP_ENCRYPT", "1");
  cfg_emit(emit, "sizes-at-bounds", &b);
  cfg_put(&b, "MINIMP_EAGER_LIMIT", "18446744073709551615");
  cfg_put(&b, "MINIMP_MAX_FRAME", "16777216g");
  cfg_put(&b, "MINIMP_RNDV_CHUNK", "1kk");
  cfg_emit(emit, "sizes-overflow", &b);
  cfg_put(&b, "MINIMP_RNDV_CHUNK", "8m");
  cfg_put(&b, "MINIMP_MAX_FRAME", "4m");
  cfg_emit(emit, "chunk-above-frame", &b);
  cfg_put(&b, "MINIMP_SHM_RING", "12k");
  cfg_emit(emit, "ring-not-power-of-two", &b);
  cfg_put(&b, "MINIMP_ENCRYPT", "yes");
  cfg_emit(emit, "encrypt-not-0-or-1", &b);
  cfg_put(&b, "MINIMP_SPIN_US", " 1000");
  cfg_put(&b, "MINIMP_SPIN_YIELD", "1");
  cfg_put(&b, "MINIMP_PROGRESS_GRACE_US", "+10");
  cfg_put(&b, "MINIMP_PROGRESS_CHECK_US", "99");
  cfg_emit(emit, "integers-lenient-and-low", &b);
  b.p[0] = 1;
  cfg_put(&b, "MINIMP_PEER_TIMEOUT_MS", "0");
  cfg_put(&b, "MINIMP_HANDSHAKE_TIMEOUT_MS", "3600000");
  cfg_put(&b, "MINIMP_BOOT_TIMEOUT_MS", "99999999999999999999");
  cfg_emit(emit, "shared-timeouts", &b);
  cfg_put(&b, "MINIMP_NET_ALPHA_US", "50");
  cfg_put(&b, "MINIMP_NET_BETA_NS", "8.4e1");
  cfg_put(&b, "MINIMP_NET_BURST_BYTES", "0x10p3");
  cfg_put(&b, "MINIMP_NET_SHARED_CPUS", "1");
  cfg_put(&b, "MINIMP_BCAST_SYM_MIN", "3k");
  cfg_put(&b, "MINIMP_BCAST_ARRIVAL_WINDOW_US", "0");
  cfg_emit(emit, "network-model", &b);
  cfg_put(&b, "MINIMP_NET_GAMMA_NS", "0.25");
  cfg_put(&b, "MINIMP_NET_NODE_ALPHA_US", "1e-3");
  cfg_put(&b, "MINIMP_NET_NODE_BETA_NS", "0.1");
  cfg_emit(emit, "node-model", &b);
  cfg_put(&b, "MINIMP_NET_NODE_BETA_NS", "");
  cfg_emit(emit, "half-a-node-model", &b);
  cfg_put(&b, "MINIMP_NET_ALPHA_US", "nan");
  cfg_emit(emit, "half-a-model", &b);
  cfg_put(&b, "MINIMP_MCAST", "on");
  cfg_put(&b, "MINIMP_MCAST_GROUP", "239.192.0.0/14");
  cfg_put(&b, "MINIMP_MCAST_PORT", "0");
  cfg_put(&b, "MINIMP_MCAST_TIMEOUT_MS", "10");
  cfg_put(&b, "MINIMP_MCAST_SOCKBUF", "1g");
  cfg_put(&b, "MINIMP_MAX_UNEXPECTED_RTS", "1");
  cfg_emit(emit, "mcast-ipv4-range", &b);
  cfg_put(&b, "MINIMP_COLL_TIMEOUT_MS", "86400000");
  cfg_put(&b, "MINIMP_NET_GAP_US", "2.5");
  cfg_put(&b, "MINIMP_PROGRESS", "external");
  cfg_put(&b, "MINIMP_ERRORS", "fatal");
  cfg_emit(emit, "modes", &b);
  cfg_put(&b, "MINIMP_ERRORS", "return");
  cfg_put(&b, "MINIMP_PROGRESS", "threads");
  cfg_emit(emit, "modes-bad", &b);
  cfg_put(&b, "MINIMP_MCAST", "auto");
  cfg_put(&b, "MINIMP_MCAST_GROUP", "ff15::1:2");
  cfg_emit(emit, "mcast-ipv6-group", &b);
  cfg_put(&b, "MINIMP_MCAST_GROUP", "224.0.0.0/4");
  cfg_emit(emit, "mcast-ipv4-widest", &b);
  cfg_put(&b, "MINIMP_MCAST_GROUP", "ff00::/8");
  cfg_emit(emit, "mcast-ipv6-widest", &b);
  cfg_put(&b, "MINIMP_MCAST_GROUP", "ff15::/7");
  cfg_put(&b, "MINIMP_MCAST_PORT", "65536");
  cfg_emit(emit, "mcast-ipv6-range-too-wide", &b);
  cfg_put(&b, "MINIMP_MCAST_GROUP", "10.0.0.1/ 8");
  cfg_put(&b, "MINIMP_MCAST", "yes");
  cfg_emit(emit, "mcast-unicast-group", &b);
  cfg_put(&b, "MINIMP_RANK", "3");
  cfg_put(&b, "MINIMP_SIZE", "4");
  cfg_put(&b, "MINIMP_BOOT_ADDR", "127.0.0.1:4000");
  cfg_put(&b, "MINIMP_JOB_KEY", "00112233445566778899aabbccddeeff");
  cfg_put(&b, "MINIMP_LOCAL_RANK", "1");
  cfg_put(&b, "MINIMP_LOCAL_SIZE", "2");
  cfg_put(&b, "MINIMP_IFACE", "lo");
  cfg_emit(emit, "identity", &b);
  cfg_put(&b, "SLURM_PROCID", "0");
  cfg_put(&b, "SLURM_NTASKS", "2");
  cfg_put(&b, "SLURM_LOCALID", "0");
  cfg_put(&b, "MINIMP_BOOT_ADDR", "[::1]:4000");
  cfg_put(&b, "MINIMP_JOB_KEY", "00112233445566778899AABBCCDDEEFF");
  cfg_put(&b, "MINIMP_BOOT_HOST", "1");
  cfg_emit(emit, "identity-slurm", &b);
  cfg_put(&b, "MINIMP_RANK", "4");
  cfg_put(&b, "MINIMP_SIZE", "4");
  cfg_put(&b, "MINIMP_BOOT_ADDR", "h:1");
  cfg_put(&b, "MINIMP_JOB_KEY", "0011");
  cfg_emit(emit, "identity-bad", &b);
  cfg_put(&b, "SLURM_PROCID", "0");
  cfg_put(&b, "SLURM_NTASKS", "4");
  cfg_put(&b, "MINIMP_JOB_KEY", "00112233445566778899aabbccddeeff");
  cfg_put(&b, "SLURM_STEP_NODELIST", "node[07-09],gpu1");
  cfg_put(&b, "SLURM_JOB_ID", "1234");
  cfg_put(&b, "SLURM_STEP_ID", "3");
  cfg_put(&b, "MINIMP_BOOT_PORTS", "20000-20015");
  cfg_emit(emit, "identity-srun-derived", &b);
  cfg_put(&b, "SLURM_PROCID", "1");
  cfg_put(&b, "SLURM_NTASKS", "2");
  cfg_put(&b, "MINIMP_JOB_KEY", "00112233445566778899aabbccddeeff");
  cfg_put(&b, "SLURM_JOB_NODELIST", "[::1]");
  cfg_put(&b, "SLURM_JOBID", "7");
  cfg_put(&b, "SLURM_STEPID", "x");
  cfg_put(&b, "MINIMP_BOOT_PORTS", "2000-1999");
  cfg_emit(emit, "identity-srun-bad", &b);
  fuzz_buf_free(&b);
}
