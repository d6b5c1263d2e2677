/* SPDX-License-Identifier: MIT */
/*
 * Every collective's table, by its public number (MMP_COLL_*): the
 * public calls that name or select algorithms of any collective. The one
 * file that lists the collectives; each lists its own algorithms
 * (<collective>/table.c).
 */
#include <string.h>

#include "collectives/allgather/allgather.h"
#include "collectives/allreduce/allreduce.h"
#include "collectives/alltoall/alltoall.h"
#include "collectives/barrier/barrier.h"
#include "collectives/bcast/bcast.h"
#include "collectives/gather/gather.h"
#include "collectives/reduce/reduce.h"
#include "collectives/reduce_scatter/reduce_scatter.h"
#include "collectives/s2p/s2p.h"
#include "collectives/registry.h"
#include "collectives/scatter/scatter.h"

static const mmp__family_t *const families[] = {
    [MMP_COLL_ALLREDUCE] = &mmp__allreduce_family,
    [MMP_COLL_REDUCE] = &mmp__reduce_family,
    [MMP_COLL_REDUCE_SCATTER] = &mmp__reduce_scatter_family,
    [MMP_COLL_GATHER] = &mmp__gather_family,
    [MMP_COLL_SCATTER] = &mmp__scatter_family,
    [MMP_COLL_ALLGATHER] = &mmp__allgather_family,
    [MMP_COLL_ALLTOALL] = &mmp__alltoall_family,
    [MMP_COLL_BCAST] = &mmp__bcast_family,
    [MMP_COLL_S2P] = &mmp__s2p_family,
    [MMP_COLL_BARRIER] = &mmp__barrier_family,
};

const mmp__family_t *mmp__family_of(int coll) {
  return coll > 0 && (size_t)coll < sizeof(families) / sizeof(families[0])
             ? families[coll]
             : NULL;
}

const char *mmp_coll_alg_name(int coll, int alg) {
  const mmp__family_t *f = mmp__family_of(coll);
  const mmp__alg_t *a;

  if (f == NULL)
    return NULL;
  if (alg == 0)
    return "auto";
  a = mmp__alg_at(f, alg);
  return a != NULL ? a->name : NULL;
}

int mmp_coll_alg_from_name(int coll, const char *name) {
  const mmp__family_t *f = mmp__family_of(coll);
  int i;

  if (f == NULL || name == NULL)
    return MMP_EINVAL;
  if (strcmp(name, "auto") == 0)
    return 0;
  i = mmp__alg_index(f, mmp__alg_find(f, name));
  return i > 0 ? i : MMP_EINVAL;
}

int mmp_coll_select(mmp_comm_t *comm, int coll, size_t count, mmp_type_t type,
                    mmp_op_t op, mmp_coll_opts_t *out) {
  static const mmp_coll_opts_t defaults = MMP_COLL_OPTS_INIT;
  static const mmp__opts_t none;
  const mmp__family_t *f = mmp__family_of(coll);
  int reducing = coll >= MMP_COLL_ALLREDUCE && coll <= MMP_COLL_REDUCE_SCATTER;
  int rc, noncomm;
  mmp__type_info_t ti;
  mmp__call_t c;
  mmp__desc_t d;
  size_t len;

  if (out == NULL || f == NULL || coll > MMP_COLL_ALLTOALL ||
      (reducing && op == 0))
    return MMP_EINVAL;
  if ((rc = mmp__coll_check(comm, type, reducing ? op : 0, &ti, &noncomm)) !=
          0 ||
      (rc = mmp__coll_elems(count, ti.size, &len)) != 0)
    return rc;
  mmp__call_init(&c, f, comm, 0, count, ti.size, ti.base, reducing ? op : 0,
                 noncomm, len);
  if ((rc = mmp__resolve(&c, &none, &d, NULL)) != 0)
    return rc;
  *out = defaults;
  out->algorithm = mmp__alg_index(f, d.alg);
  out->segment = d.seg;
  out->radix = d.radix;
  return 0;
}
