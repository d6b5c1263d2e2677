/* SPDX-License-Identifier: MIT */
/*
 * Placement and the listen address of minimprun's job (see run_place.h):
 * the rank table filled in from hosts.c's mapping, and the local address
 * chosen for the servers that every rank and daemon connects to, which
 * must reach every host of the job.
 */
#include "run_place.h"

#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "hosts.h"
#include "transport/transport.h"

int mmp__run_place(mmp__run_job_t *j) {
  char err[512], self[256] = "";
  mmp__place_t *place;
  int r, rc;

  if (!j->have_hosts &&
      mmp__hosts_add(&j->hl, "localhost", 9, j->n, err, sizeof(err)) != 0)
    return 1;
  gethostname(self, sizeof(self) - 1);
  mmp__hosts_mark_local(&j->hl, self);
  place = malloc((size_t)j->n * sizeof(*place));
  j->ranks = calloc((size_t)j->n, sizeof(*j->ranks));
  if (place == NULL || j->ranks == NULL) {
    free(place);
    return 1;
  }
  rc = mmp__hosts_map(&j->hl, j->n, (mmp__map_policy_t)j->map_policy,
                      j->oversubscribe || !j->have_hosts, place, err,
                      sizeof(err));
  for (r = 0; r < j->n && rc == 0; r++) {
    mmp__run_rank_t *rk = &j->ranks[r];
    mmp__host_t *h = &j->hl.hosts[place[r].host];
    rk->job = j;
    rk->rank = r;
    rk->host = place[r].host;
    rk->remote = !h->local;
    rk->local_rank = place[r].local_rank;
    rk->local_size = h->nranks;
    j->nremote += rk->remote;
    if (j->tag_output)
      snprintf(rk->tag, sizeof(rk->tag), "[%d] ", r);
  }
  free(place);
  if (rc != 0) {
    fprintf(stderr, "minimprun: %s\n", err);
    return MMP__RUN_EXIT_USAGE;
  }
  return 0;
}

/* The address of the first remote host, for the route towards it. */
static int run_resolve(const char *name, struct sockaddr_storage *out) {
  struct addrinfo hints, *res = NULL;
  const char *at = strrchr(name, '@'); /* "user@host" */

  memset(&hints, 0, sizeof(hints));
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(at != NULL ? at + 1 : name, NULL, &hints, &res) != 0 ||
      res == NULL)
    return -1;
  memset(out, 0, sizeof(*out));
  memcpy(out, res->ai_addr, res->ai_addrlen);
  freeaddrinfo(res);
  return 0;
}

static int run_is_wildcard(const struct sockaddr_storage *ss) {
  static const uint8_t zero[16];

  if (ss->ss_family == AF_INET)
    return ((const struct sockaddr_in *)ss)->sin_addr.s_addr == 0;
  return memcmp(&((const struct sockaddr_in6 *)ss)->sin6_addr, zero, 16) == 0;
}

int mmp__run_listen_addr(mmp__run_job_t *j) {
  struct sockaddr_storage peer;
  const char *first = NULL;
  int i;

  for (i = 0; i < j->hl.n && first == NULL; i++)
    if (!j->hl.hosts[i].local && j->hl.hosts[i].nranks > 0)
      first = j->hl.hosts[i].name;
  if (j->iface != NULL) {
    if (mmp__addr_select(j->iface, NULL, &j->listen_addr) != 0) {
      mmp__say("--iface %s: no such interface or local address here", j->iface);
      return MMP__RUN_EXIT_USAGE;
    }
  } else if (first != NULL) {
    if (run_resolve(first, &peer) != 0 ||
        mmp__addr_select(NULL, (struct sockaddr *)&peer, &j->listen_addr)) {
      mmp__say("cannot resolve host '%s' to choose the address to listen on; "
               "give --iface (an interface or CIDR that reaches every host)",
               first);
      return MMP__RUN_EXIT_USAGE;
    }
  } else {
    mmp__addr_select(NULL, NULL, &j->listen_addr); /* 127.0.0.1 */
  }
  if (run_is_wildcard(&j->listen_addr)) {
    mmp__say("refusing to listen on a wildcard address; give --iface");
    return MMP__RUN_EXIT_USAGE;
  }
  return 0;
}
