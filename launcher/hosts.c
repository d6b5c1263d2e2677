/* SPDX-License-Identifier: MIT */
/*
 * Host lists and rank placement for minimprun (see hosts.h): the --host and
 * hostfile parsers, which accumulate slots per host the way Open MPI does,
 * and the slot and node mappers. Parsing works on counted byte ranges, so a
 * hostfile is read once and never modified.
 */
#include "hosts.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "minimp.h"
#include "transport/hostlist.h"

#define HOSTS_SHOW 64 /* bytes of a bad token quoted in a message */

static int hosts_err(char *err, size_t errlen, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Writes a message into err and returns MMP_EINVAL. */
static int hosts_err(char *err, size_t errlen, const char *fmt, ...) {
  va_list ap;

  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  return MMP_EINVAL;
}

static int hosts_is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* A name an agent can take as its host argument: no option look-alike, no
 * shell or list syntax. */
static int hosts_valid_name(const char *s, size_t n) {
  size_t i;

  if (n == 0 || n > MMP__HOST_MAX_NAME || s[0] == '-')
    return 0;
  for (i = 0; i < n; i++) {
    char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
          (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_' ||
          c == ':' || c == '@' || c == '%'))
      return 0;
  }
  return 1;
}

/* Parses the `n` bytes at s as a slot count: digits only, 1..max. */
static int hosts_parse_slots(const char *s, size_t n, int *out) {
  long v = 0;
  size_t i;

  if (n == 0 || n > 9)
    return MMP_EINVAL;
  for (i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9')
      return MMP_EINVAL;
    v = v * 10 + (s[i] - '0');
  }
  if (v < 1 || v > MMP__HOST_MAX_SLOTS)
    return MMP_EINVAL;
  *out = (int)v;
  return 0;
}

void mmp__hosts_init(mmp__hostlist_t *hl) {
  memset(hl, 0, sizeof(*hl));
}

void mmp__hosts_fini(mmp__hostlist_t *hl) {
  int i;

  for (i = 0; i < hl->n; i++)
    free(hl->hosts[i].name);
  free(hl->hosts);
  mmp__hosts_init(hl);
}

int mmp__hosts_add(mmp__hostlist_t *hl, const char *name, size_t len, int slots,
                   char *err, size_t errlen) {
  mmp__host_t *h;
  int i;

  if (!hosts_valid_name(name, len))
    return hosts_err(err, errlen, "bad host name '%.*s'",
                     (int)(len < HOSTS_SHOW ? len : HOSTS_SHOW), name);
  for (i = 0; i < hl->n; i++) {
    h = &hl->hosts[i];
    if (strlen(h->name) != len || memcmp(h->name, name, len) != 0)
      continue;
    /* Listed again: Open MPI adds the slots up. */
    if (slots > MMP__HOST_MAX_SLOTS - h->slots)
      return hosts_err(err, errlen, "host '%s' has more than %d slots", h->name,
                       MMP__HOST_MAX_SLOTS);
    h->slots += slots;
    return 0;
  }
  if (hl->n == hl->cap) {
    int cap = hl->cap != 0 ? 2 * hl->cap : 8;
    mmp__host_t *nh = realloc(hl->hosts, (size_t)cap * sizeof(*nh));
    if (nh == NULL)
      return MMP_ENOMEM;
    hl->hosts = nh;
    hl->cap = cap;
  }
  h = &hl->hosts[hl->n];
  memset(h, 0, sizeof(*h));
  h->name = malloc(len + 1);
  if (h->name == NULL)
    return MMP_ENOMEM;
  memcpy(h->name, name, len);
  h->name[len] = '\0';
  h->slots = slots;
  hl->n++;
  return 0;
}

/* One --host entry: "name", "name:N", "[v6]" or "[v6]:N". */
static int hosts_list_entry(mmp__hostlist_t *hl, const char *e, size_t n,
                            char *err, size_t errlen) {
  const char *name = e, *colon = NULL;
  size_t nlen = n;
  int slots = 1;

  if (n > 0 && e[0] == '[') {
    const char *close = memchr(e, ']', n);
    if (close == NULL || (close + 1 < e + n && close[1] != ':'))
      return hosts_err(err, errlen, "--host: bad entry '%.*s'",
                       (int)(n < HOSTS_SHOW ? n : HOSTS_SHOW), e);
    name = e + 1;
    nlen = (size_t)(close - name);
    colon = close + 1 < e + n ? close + 1 : NULL;
  } else {
    const char *c1 = memchr(e, ':', n);
    /* More than one colon is an IPv6 literal without slots. */
    if (c1 != NULL && memchr(c1 + 1, ':', n - (size_t)(c1 + 1 - e)) == NULL) {
      colon = c1;
      nlen = (size_t)(c1 - e);
    }
  }
  if (colon != NULL &&
      hosts_parse_slots(colon + 1, n - (size_t)(colon + 1 - e), &slots) != 0)
    return hosts_err(err, errlen,
                     "--host: bad slot count in '%.*s' (a whole number from 1 "
                     "to %d)",
                     (int)(n < HOSTS_SHOW ? n : HOSTS_SHOW), e,
                     MMP__HOST_MAX_SLOTS);
  if (nlen == 0)
    return hosts_err(err, errlen, "--host: empty host name in '%.*s'",
                     (int)(n < HOSTS_SHOW ? n : HOSTS_SHOW), e);
  return mmp__hosts_add(hl, name, nlen, slots, err, errlen);
}

int mmp__hosts_parse_list(mmp__hostlist_t *hl, const char *spec, char *err,
                          size_t errlen) {
  const char *p = spec;

  for (;;) {
    const char *comma = strchr(p, ',');
    size_t n = comma != NULL ? (size_t)(comma - p) : strlen(p);
    int rc;
    if (n == 0)
      return hosts_err(err, errlen, "--host: empty entry in '%s'", spec);
    rc = hosts_list_entry(hl, p, n, err, errlen);
    if (rc != 0)
      return rc;
    if (comma == NULL)
      return 0;
    p = comma + 1;
  }
}

/* One hostfile line without its comment: "name [slots=N]". */
static int hosts_file_line(mmp__hostlist_t *hl, const char *fname, long lineno,
                           const char *p, const char *end, char *err,
                           size_t errlen) {
  const char *name = NULL, *tok;
  size_t nlen = 0, tlen;
  int slots = 0, have = 0, rc;

  for (;;) {
    while (p < end && hosts_is_space(*p))
      p++;
    if (p == end)
      break;
    tok = p;
    while (p < end && !hosts_is_space(*p))
      p++;
    tlen = (size_t)(p - tok);
    if (name == NULL) {
      name = tok;
      nlen = tlen;
    } else if (tlen < 6 || memcmp(tok, "slots=", 6) != 0) {
      return hosts_err(err, errlen, "%s:%ld: expected 'slots=N', got '%.*s'",
                       fname, lineno,
                       (int)(tlen < HOSTS_SHOW ? tlen : HOSTS_SHOW), tok);
    } else if (have) {
      return hosts_err(err, errlen, "%s:%ld: 'slots=' given twice", fname,
                       lineno);
    } else if (hosts_parse_slots(tok + 6, tlen - 6, &slots) != 0) {
      return hosts_err(err, errlen,
                       "%s:%ld: bad slot count '%.*s' (a whole number from 1 "
                       "to %d)",
                       fname, lineno,
                       (int)(tlen - 6 < HOSTS_SHOW ? tlen - 6 : HOSTS_SHOW),
                       tok + 6, MMP__HOST_MAX_SLOTS);
    } else {
      have = 1;
    }
  }
  if (name == NULL)
    return 0; /* a blank or comment line */
  rc = mmp__hosts_add(hl, name, nlen, have ? slots : 1, err, errlen);
  if (rc == MMP_EINVAL) {
    char why[320];
    snprintf(why, sizeof(why), "%s", err);
    return hosts_err(err, errlen, "%s:%ld: %s", fname, lineno, why);
  }
  return rc;
}

int mmp__hosts_parse_text(mmp__hostlist_t *hl, const char *fname,
                          const char *text, size_t len, char *err,
                          size_t errlen) {
  const char *p = text, *end = text + len;
  long lineno = 0;

  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *eol = nl != NULL ? nl : end;
    const char *hash = memchr(p, '#', (size_t)(eol - p));
    const char *nul = memchr(p, '\0', (size_t)(eol - p));
    int rc;
    lineno++;
    /* Quoting a token would stop at the NUL and show a misleading rest. */
    if (nul != NULL)
      return hosts_err(err, errlen,
                       "%s:%ld: a NUL byte at column %ld (binary content, "
                       "not a hostfile?)",
                       fname, lineno, (long)(nul - p) + 1);
    rc = hosts_file_line(hl, fname, lineno, p, hash != NULL ? hash : eol, err,
                         errlen);
    if (rc != 0)
      return rc;
    p = nl != NULL ? nl + 1 : end;
  }
  return 0;
}

/* Reads a whole file smaller than MMP__HOSTFILE_MAX bytes. */
static int hosts_read(const char *path, char **out, size_t *len, char *err,
                      size_t errlen) {
  FILE *f = fopen(path, "rb");
  size_t cap = 0, n = 0, got;
  char *buf = NULL;
  int rc = 0;

  if (f == NULL)
    return hosts_err(err, errlen, "cannot read hostfile '%s': %s", path,
                     strerror(errno));
  do {
    if (n == cap) {
      char *nb;
      if (cap >= MMP__HOSTFILE_MAX) {
        rc = hosts_err(err, errlen, "%s: too large (%u MiB or more)", path,
                       MMP__HOSTFILE_MAX >> 20);
        break;
      }
      cap = cap != 0 ? 2 * cap : 4096;
      nb = realloc(buf, cap);
      if (nb == NULL) {
        rc = MMP_ENOMEM;
        break;
      }
      buf = nb;
    }
    got = fread(buf + n, 1, cap - n, f);
    n += got;
  } while (got > 0);
  if (rc == 0 && ferror(f))
    rc = hosts_err(err, errlen, "cannot read hostfile '%s': %s", path,
                   strerror(errno));
  fclose(f);
  if (rc != 0) {
    free(buf);
    return rc;
  }
  *out = buf;
  *len = n;
  return 0;
}

int mmp__hosts_parse_file(mmp__hostlist_t *hl, const char *path, char *err,
                          size_t errlen) {
  char *text = NULL;
  size_t len = 0;
  int before = hl->n, rc;

  rc = hosts_read(path, &text, &len, err, errlen);
  if (rc != 0)
    return rc;
  rc = mmp__hosts_parse_text(hl, path, text, len, err, errlen);
  free(text);
  if (rc == 0 && hl->n == before)
    return hosts_err(err, errlen, "%s: no hosts listed", path);
  return rc;
}

void mmp__hosts_mark_local(mmp__hostlist_t *hl, const char *self) {
  static const char *const loopback[] = {"localhost", "127.0.0.1", "::1"};
  size_t selflen = 0, shortlen = 0, k;
  int i;

  if (self != NULL && *self != '\0') {
    selflen = strlen(self);
    shortlen = strcspn(self, ".");
  }
  for (i = 0; i < hl->n; i++) {
    mmp__host_t *h = &hl->hosts[i];
    size_t n = strlen(h->name);
    h->local = 0;
    for (k = 0; k < sizeof(loopback) / sizeof(loopback[0]); k++)
      if (strcmp(h->name, loopback[k]) == 0)
        h->local = 1;
    if (selflen > 0 && ((n == selflen && memcmp(h->name, self, n) == 0) ||
                        (n == shortlen && memcmp(h->name, self, n) == 0)))
      h->local = 1;
  }
}

long mmp__hosts_slots(const mmp__hostlist_t *hl) {
  long total = 0;
  int i;

  for (i = 0; i < hl->n; i++)
    total += hl->hosts[i].slots;
  return total;
}

static void hosts_put(mmp__hostlist_t *hl, int h, mmp__place_t *pl) {
  pl->host = h;
  pl->local_rank = hl->hosts[h].nranks++;
}

int mmp__hosts_map(mmp__hostlist_t *hl, int n, mmp__map_policy_t policy,
                   int oversubscribe, mmp__place_t *place, char *err,
                   size_t errlen) {
  long slots = mmp__hosts_slots(hl);
  int r = 0, h, k, full = 0;

  if (hl->n == 0)
    return hosts_err(err, errlen, "no hosts to run on");
  if (n > slots && !oversubscribe)
    return hosts_err(err, errlen,
                     "not enough slots: %d rank(s) requested, %ld slot(s) on "
                     "%d host(s) (use --oversubscribe to allow more)",
                     n, slots, hl->n);
  for (h = 0; h < hl->n; h++)
    hl->hosts[h].nranks = 0;
  if (policy == MMP__MAP_SLOT) {
    /* Each pass fills every host's slots in turn; oversubscribed ranks
     * start another pass. */
    while (r < n)
      for (h = 0; h < hl->n && r < n; h++)
        for (k = 0; k < hl->hosts[h].slots && r < n; k++)
          hosts_put(hl, h, &place[r++]);
    return 0;
  }
  /* Round-robin over the hosts with a free slot; once none has one (only
   * when oversubscribed), over every host. */
  while (r < n) {
    int placed = 0;
    for (h = 0; h < hl->n && r < n; h++) {
      if (!full && hl->hosts[h].nranks >= hl->hosts[h].slots)
        continue;
      hosts_put(hl, h, &place[r++]);
      placed = 1;
    }
    if (!placed)
      full = 1;
  }
  return 0;
}

/* The hosts of a Slurm host list, one pass to count them, one to add. */
typedef struct hosts_slurm_s {
  mmp__hostlist_t *hl;
  const int *slots; /* NULL while counting */
  int n;
  char *err;
  size_t errlen;
} hosts_slurm_t;

static int hosts_slurm_one(void *ctx, const char *name, size_t len) {
  hosts_slurm_t *s = ctx;
  int rc = 0;

  if (s->slots != NULL)
    rc = mmp__hosts_add(s->hl, name, len, s->slots[s->n], s->err, s->errlen);
  s->n++;
  return rc;
}

int mmp__hosts_parse_slurm(mmp__hostlist_t *hl, const char *nodelist,
                           const char *tasks, char *err, size_t errlen) {
  hosts_slurm_t s;
  const char *var = "SLURM_JOB_NODELIST";
  char why[400];
  int rc;

  memset(&s, 0, sizeof(s));
  s.hl = hl;
  s.err = why;
  s.errlen = sizeof(why);
  rc = mmp__hostlist_expand(nodelist, hosts_slurm_one, &s, why, sizeof(why));
  if (rc == 0) {
    int *slots = malloc((size_t)s.n * sizeof(*slots));
    if (slots == NULL)
      return MMP_ENOMEM;
    rc = mmp__hostlist_tasks(tasks, slots, s.n, why, sizeof(why));
    if (rc != 0)
      var = "SLURM_TASKS_PER_NODE";
    s.slots = slots;
    s.n = 0;
    if (rc == 0)
      rc =
          mmp__hostlist_expand(nodelist, hosts_slurm_one, &s, why, sizeof(why));
    free(slots);
  }
  if (rc == MMP_EINVAL)
    snprintf(err, errlen, "%s: %s", var, why);
  return rc;
}
