/* SPDX-License-Identifier: MIT */
/*
 * Binding ranks to cores (see bind.h): the cores are read from sysfs and
 * restricted to the CPUs this process may use, so that a launcher started
 * in a cpuset (a batch job's) binds its ranks inside that cpuset only.
 */
#include "bind.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The lowest CPU in `allowed` that shares a core with `cpu` (itself if
 * sysfs says nothing). */
static int bind_first_sibling(int cpu, const cpu_set_t *allowed) {
  char path[96], list[256];
  const char *p = list;
  int first = cpu, n;
  FILE *f;

  snprintf(path, sizeof(path),
           "/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", cpu);
  f = fopen(path, "r");
  if (f == NULL)
    return cpu;
  n = fgets(list, sizeof(list), f) != NULL;
  fclose(f);
  while (n) {
    int lo, hi, used = 0, c;
    /* "0,4" or "0-1": ranges separated by commas. */
    if (sscanf(p, "%d%n", &lo, &used) != 1)
      break;
    p += used;
    hi = lo;
    if (*p == '-' && sscanf(p + 1, "%d%n", &hi, &used) == 1)
      p += 1 + used;
    for (c = lo; c <= hi && c < first && c < CPU_SETSIZE; c++)
      if (c >= 0 && CPU_ISSET(c, allowed))
        first = c;
    if (*p++ != ',')
      break;
  }
  return first;
}

int mmp__bind_core(int k, cpu_set_t *set, int *core) {
  cpu_set_t allowed;
  int c, ncores = 0, idx = 0, rep = -1;

  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0)
    return -1;
  for (c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, &allowed) && bind_first_sibling(c, &allowed) == c)
      ncores++;
  if (ncores == 0)
    return -1;
  /* More ranks than cores: round again, as a slot wraps round. */
  *core = k % ncores;
  for (c = 0; c < CPU_SETSIZE && rep < 0; c++)
    if (CPU_ISSET(c, &allowed) && bind_first_sibling(c, &allowed) == c &&
        idx++ == *core)
      rep = c;
  CPU_ZERO(set);
  for (c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, &allowed) && bind_first_sibling(c, &allowed) == rep)
      CPU_SET(c, set);
  return 0;
}

const cpu_set_t *mmp__bind_for(int bind_core, int local_rank, cpu_set_t *set,
                               int *core) {
  *core = -1;
  return bind_core && mmp__bind_core(local_rank, set, core) == 0 ? set : NULL;
}

void mmp__bind_report(int pid, int rank, int core, const cpu_set_t *set) {
  char line[1024], host[256] = "";
  cpu_set_t allowed;
  int c, last = 0;
  size_t n;

  gethostname(host, sizeof(host) - 1);
  if (set == NULL) {
    n = (size_t)snprintf(line, sizeof(line),
                         "[%s:%d] MCW rank %d is not bound (or bound to all "
                         "available processors)\n",
                         host, pid, rank);
  } else {
    if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0)
      CPU_ZERO(&allowed);
    for (c = 0; c < CPU_SETSIZE; c++)
      if (CPU_ISSET(c, &allowed) || CPU_ISSET(c, set))
        last = c;
    n = (size_t)snprintf(line, sizeof(line),
                         "[%s:%d] MCW rank %d bound to "
                         "core %d: [",
                         host, pid, rank, core);
    for (c = 0; c <= last && n + 4 < sizeof(line); c++)
      n += (size_t)snprintf(line + n, sizeof(line) - n, "%s%c", c ? "/" : "",
                            CPU_ISSET(c, set) ? 'B' : '.');
    n += (size_t)snprintf(line + n, sizeof(line) - n, "]\n");
  }
  if (n >= sizeof(line))
    n = sizeof(line) - 1;
  if (write(2, line, n) < 0)
    return; /* nobody reads our stderr any more */
}
