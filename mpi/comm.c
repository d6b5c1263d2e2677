/* SPDX-License-Identifier: MIT */
/*
 * Communicators, groups and attributes. A communicator wraps libminimp's
 * (dup, split and create are libminimp's); its group lists the members'
 * world ranks (mmp_comm_world_rank), which is all MPI_Comm_compare and the
 * group calls need. Attributes hang off the communicator in the order
 * they were set; dup runs their copy callbacks, free and delete their
 * delete callbacks.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpii.h"

struct mmpi_comm_s mmpi_comm_world = {
    NULL, 0, 0, 1, NULL, &mmpi_errors_are_fatal, NULL, "MPI_COMM_WORLD"};
struct mmpi_comm_s mmpi_comm_self = {
    NULL, 0, 0, 1, NULL, &mmpi_errors_are_fatal, NULL, "MPI_COMM_SELF"};
struct mmpi_group_s mmpi_group_empty = {1, 1, 0, MPI_UNDEFINED, NULL};

/* The values of the predefined attributes (MPI_Comm_get_attr hands out
 * their addresses). */
static int attr_tag_ub = MMP_TAG_MAX;
static int attr_host = MPI_PROC_NULL;
static int attr_io = MPI_ANY_SOURCE;
static int attr_wtime_global = 0; /* one clock per machine, not per job */

/* ---- Groups -------------------------------------------------------------
 */

MPI_Group mmpi__group_new(int n, const int *world) {
  MPI_Group g;
  int i;

  if (n == 0)
    return MPI_GROUP_EMPTY;
  if ((g = calloc(1, sizeof(*g))) == NULL ||
      (g->world = malloc((size_t)n * sizeof(int))) == NULL) {
    free(g);
    return NULL;
  }
  atomic_init(&g->refs, 1);
  g->size = n;
  g->rank = MPI_UNDEFINED;
  memcpy(g->world, world, (size_t)n * sizeof(int));
  for (i = 0; i < n; i++)
    if (world[i] == mmpi_comm_world.rank)
      g->rank = i;
  return g;
}

void mmpi__group_release(MPI_Group g) {
  if (g != MPI_GROUP_NULL && !g->predefined &&
      atomic_fetch_sub(&g->refs, 1) == 1) {
    free(g->world);
    free(g);
  }
}

/* A map from world rank to rank in `g` (-1 if not a member), of the
 * world's size; NULL when out of memory. */
static int *group_index(MPI_Group g) {
  int *idx = malloc((size_t)mmpi_comm_world.size * sizeof(int)), i;

  if (idx == NULL)
    return NULL;
  for (i = 0; i < mmpi_comm_world.size; i++)
    idx[i] = -1;
  for (i = 0; i < g->size; i++)
    idx[g->world[i]] = i;
  return idx;
}

int MPI_Group_size(MPI_Group group, int *size) {
  if (group == MPI_GROUP_NULL || size == NULL)
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_GROUP, __func__);
  *size = group->size;
  return MPI_SUCCESS;
}

int MPI_Group_rank(MPI_Group group, int *rank) {
  if (group == MPI_GROUP_NULL || rank == NULL)
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_GROUP, __func__);
  *rank = group->rank;
  return MPI_SUCCESS;
}

int MPI_Group_translate_ranks(MPI_Group group1, int n, const int ranks1[],
                              MPI_Group group2, int ranks2[]) {
  int i, *idx;

  if (group1 == MPI_GROUP_NULL || group2 == MPI_GROUP_NULL)
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_GROUP, __func__);
  if (n < 0 || (n > 0 && (ranks1 == NULL || ranks2 == NULL)))
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_ARG, __func__);
  for (i = 0; i < n; i++)
    if (ranks1[i] != MPI_PROC_NULL &&
        (ranks1[i] < 0 || ranks1[i] >= group1->size))
      return mmpi__raise(MPI_COMM_NULL, MPI_ERR_RANK, __func__);
  if ((idx = group_index(group2)) == NULL)
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_NO_MEM, __func__);
  for (i = 0; i < n; i++) {
    int w = ranks1[i] == MPI_PROC_NULL ? -1 : group1->world[ranks1[i]];
    ranks2[i] = ranks1[i] == MPI_PROC_NULL ? MPI_PROC_NULL
                : idx[w] >= 0              ? idx[w]
                                           : MPI_UNDEFINED;
  }
  free(idx);
  return MPI_SUCCESS;
}

/* MPI_IDENT, MPI_SIMILAR or MPI_UNEQUAL for two lists of world ranks;
 * -1 when out of memory. */
static int members_compare(const MPI_Group a, const MPI_Group b) {
  int i, *idx, res = MPI_IDENT;

  if (a->size != b->size)
    return MPI_UNEQUAL;
  for (i = 0; i < a->size; i++)
    if (a->world[i] != b->world[i])
      break;
  if (i == a->size)
    return MPI_IDENT;
  if ((idx = group_index(b)) == NULL)
    return -1;
  res = MPI_SIMILAR;
  for (i = 0; i < a->size && res == MPI_SIMILAR; i++)
    if (idx[a->world[i]] < 0)
      res = MPI_UNEQUAL;
  free(idx);
  return res;
}

int MPI_Group_compare(MPI_Group group1, MPI_Group group2, int *result) {
  int r;

  if (group1 == MPI_GROUP_NULL || group2 == MPI_GROUP_NULL || result == NULL)
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_GROUP, __func__);
  if ((r = members_compare(group1, group2)) < 0)
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_NO_MEM, __func__);
  *result = r;
  return MPI_SUCCESS;
}

/* Makes *out from the members of `g` whose `keep` flag is set, in the
 * order of `order` (ranks of g), n of them. */
static int group_from(MPI_Group g, const int *order, int n, MPI_Group *out) {
  int *w = malloc((size_t)(n > 0 ? n : 1) * sizeof(int)), i;

  if (w == NULL)
    return MPI_ERR_NO_MEM;
  for (i = 0; i < n; i++)
    w[i] = g->world[order[i]];
  *out = mmpi__group_new(n, w);
  free(w);
  return *out == NULL ? MPI_ERR_NO_MEM : MPI_SUCCESS;
}

/* Marks the ranks listed in `ranks` (n of them) in `seen`; MPI_ERR_RANK
 * for one out of range or listed twice. */
static int mark_ranks(MPI_Group g, int n, const int *ranks, char *seen) {
  int i;

  for (i = 0; i < n; i++) {
    if (ranks[i] < 0 || ranks[i] >= g->size || seen[ranks[i]])
      return MPI_ERR_RANK;
    seen[ranks[i]] = 1;
  }
  return MPI_SUCCESS;
}

static int incl_excl(MPI_Group group, int n, const int *ranks, int excl,
                     MPI_Group *newgroup) {
  char *seen;
  int *order, i, k = 0, rc;

  if (group == MPI_GROUP_NULL || newgroup == NULL)
    return MPI_ERR_GROUP;
  if (n < 0 || n > group->size || (n > 0 && ranks == NULL))
    return MPI_ERR_ARG;
  seen = calloc((size_t)group->size + 1, 1);
  order = malloc(((size_t)group->size + 1) * sizeof(int));
  rc = seen == NULL || order == NULL ? MPI_ERR_NO_MEM
                                     : mark_ranks(group, n, ranks, seen);
  if (rc == MPI_SUCCESS) {
    if (excl) {
      for (i = 0; i < group->size; i++)
        if (!seen[i])
          order[k++] = i;
    } else {
      memcpy(order, ranks, (size_t)n * sizeof(int));
      k = n;
    }
    rc = group_from(group, order, k, newgroup);
  }
  free(seen);
  free(order);
  return rc;
}

int MPI_Group_incl(MPI_Group group, int n, const int ranks[],
                   MPI_Group *newgroup) {
  return mmpi__raise(MPI_COMM_NULL, incl_excl(group, n, ranks, 0, newgroup),
                     __func__);
}

int MPI_Group_excl(MPI_Group group, int n, const int ranks[],
                   MPI_Group *newgroup) {
  return mmpi__raise(MPI_COMM_NULL, incl_excl(group, n, ranks, 1, newgroup),
                     __func__);
}

/* The ranks the triplets name, in order, into a list of at most
 * group->size; MPI_ERR_RANK or MPI_ERR_ARG for bad triplets. */
static int expand_ranges(MPI_Group g, int n, int ranges[][3], int **out,
                         int *count) {
  int i, k = 0, *list = malloc(((size_t)g->size + 1) * sizeof(int));

  if (list == NULL)
    return MPI_ERR_NO_MEM;
  for (i = 0; i < n; i++) {
    long long f = ranges[i][0], l = ranges[i][1], s = ranges[i][2], r;
    if (s == 0 || f < 0 || f >= g->size || l < 0 || l >= g->size ||
        (s > 0 && f > l) || (s < 0 && f < l)) {
      free(list);
      return s == 0 ? MPI_ERR_ARG : MPI_ERR_RANK;
    }
    for (r = f; s > 0 ? r <= l : r >= l; r += s) {
      if (k == g->size) { /* more than the group holds: a repeat */
        free(list);
        return MPI_ERR_RANK;
      }
      list[k++] = (int)r;
    }
  }
  *out = list;
  *count = k;
  return MPI_SUCCESS;
}

static int range_incl_excl(MPI_Group group, int n, int ranges[][3], int excl,
                           MPI_Group *newgroup) {
  int *list, k, rc;

  if (group == MPI_GROUP_NULL || newgroup == NULL)
    return MPI_ERR_GROUP;
  if (n < 0 || (n > 0 && ranges == NULL))
    return MPI_ERR_ARG;
  if ((rc = expand_ranges(group, n, ranges, &list, &k)) != MPI_SUCCESS)
    return rc;
  rc = incl_excl(group, k, list, excl, newgroup);
  free(list);
  return rc;
}

int MPI_Group_range_incl(MPI_Group group, int n, int ranges[][3],
                         MPI_Group *newgroup) {
  return mmpi__raise(MPI_COMM_NULL,
                     range_incl_excl(group, n, ranges, 0, newgroup), __func__);
}

int MPI_Group_range_excl(MPI_Group group, int n, int ranges[][3],
                         MPI_Group *newgroup) {
  return mmpi__raise(MPI_COMM_NULL,
                     range_incl_excl(group, n, ranges, 1, newgroup), __func__);
}

enum { SET_UNION, SET_INTERSECTION, SET_DIFFERENCE };

static int set_op(MPI_Group a, MPI_Group b, int what, MPI_Group *out) {
  int *in_b, *w, i, k = 0;

  if (a == MPI_GROUP_NULL || b == MPI_GROUP_NULL || out == NULL)
    return MPI_ERR_GROUP;
  if ((in_b = group_index(b)) == NULL)
    return MPI_ERR_NO_MEM;
  if ((w = malloc(((size_t)a->size + (size_t)b->size + 1) * sizeof(int))) ==
      NULL) {
    free(in_b);
    return MPI_ERR_NO_MEM;
  }
  /* a's members in a's order, then (union) b's that a lacks. */
  for (i = 0; i < a->size; i++)
    if (what == SET_UNION ||
        (what == SET_INTERSECTION) == (in_b[a->world[i]] >= 0))
      w[k++] = a->world[i];
  if (what == SET_UNION) {
    int *in_a = group_index(a);
    if (in_a == NULL) {
      free(in_b);
      free(w);
      return MPI_ERR_NO_MEM;
    }
    for (i = 0; i < b->size; i++)
      if (in_a[b->world[i]] < 0)
        w[k++] = b->world[i];
    free(in_a);
  }
  *out = mmpi__group_new(k, w);
  free(in_b);
  free(w);
  return *out == NULL ? MPI_ERR_NO_MEM : MPI_SUCCESS;
}

int MPI_Group_union(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup) {
  return mmpi__raise(MPI_COMM_NULL, set_op(group1, group2, SET_UNION, newgroup),
                     __func__);
}

int MPI_Group_intersection(MPI_Group group1, MPI_Group group2,
                           MPI_Group *newgroup) {
  return mmpi__raise(MPI_COMM_NULL,
                     set_op(group1, group2, SET_INTERSECTION, newgroup),
                     __func__);
}

int MPI_Group_difference(MPI_Group group1, MPI_Group group2,
                         MPI_Group *newgroup) {
  return mmpi__raise(MPI_COMM_NULL,
                     set_op(group1, group2, SET_DIFFERENCE, newgroup),
                     __func__);
}

int MPI_Group_free(MPI_Group *group) {
  if (group == NULL || *group == MPI_GROUP_NULL)
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_GROUP, __func__);
  mmpi__group_release(*group);
  *group = MPI_GROUP_NULL;
  return MPI_SUCCESS;
}

/* ---- Keyvals and attributes ----------------------------------------------
 */

typedef struct keyval_s {
  MPI_Comm_copy_attr_function *copy;
  MPI_Comm_delete_attr_function *del;
  void *extra;
  int refs; /* the handle while not freed, and each attribute using it */
} keyval_t;

#define KEYVAL_BASE 16    /* below: the predefined keys */
static keyval_t *keyvals; /* mmpi__mu */
static int nkeyvals;

static keyval_t *keyval_get(int k) {
  k -= KEYVAL_BASE;
  return k >= 0 && k < nkeyvals && keyvals[k].refs > 0 ? &keyvals[k] : NULL;
}

static void keyval_unref(int k) {
  keyval_t *kv = keyval_get(k);

  if (kv != NULL)
    kv->refs--;
}

int mmpi_comm_null_copy_fn(MPI_Comm oldcomm, int keyval, void *extra, void *in,
                           void *out, int *flag) {
  (void)oldcomm;
  (void)keyval;
  (void)extra;
  (void)in;
  (void)out;
  *flag = 0;
  return MPI_SUCCESS;
}

int mmpi_comm_dup_fn(MPI_Comm oldcomm, int keyval, void *extra, void *in,
                     void *out, int *flag) {
  (void)oldcomm;
  (void)keyval;
  (void)extra;
  memcpy(out, &in, sizeof(in));
  *flag = 1;
  return MPI_SUCCESS;
}

int mmpi_comm_null_delete_fn(MPI_Comm comm, int keyval, void *value,
                             void *extra) {
  (void)comm;
  (void)keyval;
  (void)value;
  (void)extra;
  return MPI_SUCCESS;
}

int MPI_Comm_create_keyval(MPI_Comm_copy_attr_function *copy_fn,
                           MPI_Comm_delete_attr_function *delete_fn,
                           int *comm_keyval, void *extra_state) {
  int i, rc = MPI_SUCCESS;

  if (comm_keyval == NULL)
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_ARG, __func__);
  pthread_mutex_lock(&mmpi__mu);
  for (i = 0; i < nkeyvals && keyvals[i].refs > 0; i++)
    ;
  if (i == nkeyvals) {
    keyval_t *k = realloc(keyvals, (size_t)(nkeyvals + 8) * sizeof(*k));
    if (k == NULL) {
      rc = MPI_ERR_NO_MEM;
    } else {
      memset(k + nkeyvals, 0, 8 * sizeof(*k));
      keyvals = k;
      nkeyvals += 8;
    }
  }
  if (rc == MPI_SUCCESS) {
    keyvals[i].copy = copy_fn != NULL ? copy_fn : MPI_COMM_NULL_COPY_FN;
    keyvals[i].del = delete_fn != NULL ? delete_fn : MPI_COMM_NULL_DELETE_FN;
    keyvals[i].extra = extra_state;
    keyvals[i].refs = 1;
    *comm_keyval = KEYVAL_BASE + i;
  }
  pthread_mutex_unlock(&mmpi__mu);
  return mmpi__raise(MPI_COMM_NULL, rc, __func__);
}

int MPI_Comm_free_keyval(int *comm_keyval) {
  int rc = MPI_SUCCESS;

  if (comm_keyval == NULL)
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_ARG, __func__);
  pthread_mutex_lock(&mmpi__mu);
  if (keyval_get(*comm_keyval) == NULL)
    rc = MPI_ERR_KEYVAL;
  else
    keyval_unref(*comm_keyval);
  pthread_mutex_unlock(&mmpi__mu);
  if (rc == MPI_SUCCESS)
    *comm_keyval = MPI_KEYVAL_INVALID;
  return mmpi__raise(MPI_COMM_NULL, rc, __func__);
}

/* Lock held. Runs the delete callback of `a` on `comm`. */
static int attr_delete_cb(MPI_Comm comm, const mmpi__attr_t *a) {
  keyval_t *kv = keyval_get(a->keyval);

  return kv != NULL ? kv->del(comm, a->keyval, a->value, kv->extra)
                    : MPI_SUCCESS;
}

static int set_attr(MPI_Comm comm, int keyval, void *value) {
  mmpi__attr_t *a, **tail;
  int rc;

  if (keyval_get(keyval) == NULL)
    return MPI_ERR_KEYVAL;
  for (tail = &comm->attrs; *tail != NULL; tail = &(*tail)->next)
    if ((*tail)->keyval == keyval) {
      if ((rc = attr_delete_cb(comm, *tail)) != MPI_SUCCESS)
        return rc;
      (*tail)->value = value;
      return MPI_SUCCESS;
    }
  if ((a = malloc(sizeof(*a))) == NULL)
    return MPI_ERR_NO_MEM;
  a->next = NULL;
  a->keyval = keyval;
  a->value = value;
  *tail = a;
  keyval_get(keyval)->refs++;
  return MPI_SUCCESS;
}

int MPI_Comm_set_attr(MPI_Comm comm, int comm_keyval, void *attribute_val) {
  int rc;

  if (!mmpi__comm_ok(comm))
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_COMM, __func__);
  pthread_mutex_lock(&mmpi__mu);
  rc = set_attr(comm, comm_keyval, attribute_val);
  pthread_mutex_unlock(&mmpi__mu);
  return mmpi__raise(comm, rc, __func__);
}

int MPI_Comm_get_attr(MPI_Comm comm, int comm_keyval, void *attribute_val,
                      int *flag) {
  mmpi__attr_t *a;
  void *v = NULL;

  if (!mmpi__comm_ok(comm))
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_COMM, __func__);
  if (attribute_val == NULL || flag == NULL)
    return mmpi__raise(comm, MPI_ERR_ARG, __func__);
  *flag = 1;
  switch (comm_keyval) {
  case MPI_TAG_UB:
    v = &attr_tag_ub;
    break;
  case MPI_HOST:
    v = &attr_host;
    break;
  case MPI_IO:
    v = &attr_io;
    break;
  case MPI_WTIME_IS_GLOBAL:
    v = &attr_wtime_global;
    break;
  default:
    pthread_mutex_lock(&mmpi__mu);
    if (keyval_get(comm_keyval) == NULL) {
      pthread_mutex_unlock(&mmpi__mu);
      return mmpi__raise(comm, MPI_ERR_KEYVAL, __func__);
    }
    *flag = 0;
    for (a = comm->attrs; a != NULL; a = a->next)
      if (a->keyval == comm_keyval) {
        v = a->value;
        *flag = 1;
      }
    pthread_mutex_unlock(&mmpi__mu);
  }
  if (*flag)
    memcpy(attribute_val, &v, sizeof(v));
  return MPI_SUCCESS;
}

/* Lock held. Deletes the attribute of `keyval` from `comm`; MPI_ERR_KEYVAL
 * if it has none, or the delete callback's error (the attribute stays). */
static int delete_attr(MPI_Comm comm, int keyval) {
  mmpi__attr_t **p, *a;
  int rc;

  for (a = comm->attrs; a != NULL && a->keyval != keyval; a = a->next)
    ;
  if (a == NULL)
    return MPI_ERR_KEYVAL;
  if ((rc = attr_delete_cb(comm, a)) != MPI_SUCCESS)
    return rc;
  /* Found again: the callback may have deleted or set other attributes
   * of comm (the lock is recursive), which moves the list around it. */
  for (p = &comm->attrs; *p != a; p = &(*p)->next)
    ;
  *p = a->next;
  keyval_unref(keyval);
  free(a);
  return MPI_SUCCESS;
}

int MPI_Comm_delete_attr(MPI_Comm comm, int comm_keyval) {
  int rc;

  if (!mmpi__comm_ok(comm))
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_COMM, __func__);
  pthread_mutex_lock(&mmpi__mu);
  rc = keyval_get(comm_keyval) == NULL ? MPI_ERR_KEYVAL
                                       : delete_attr(comm, comm_keyval);
  pthread_mutex_unlock(&mmpi__mu);
  return mmpi__raise(comm, rc, __func__);
}

/* Lock held. Deletes every attribute of `comm`, the last set first. */
static int delete_all_attrs(MPI_Comm comm) {
  int rc = MPI_SUCCESS;

  while (comm->attrs != NULL && rc == MPI_SUCCESS) {
    mmpi__attr_t *last = comm->attrs;
    while (last->next != NULL)
      last = last->next;
    rc = delete_attr(comm, last->keyval);
  }
  return rc;
}

/* Lock held. Copies `from`'s attributes to `to` through their copy
 * callbacks. */
static int copy_attrs(MPI_Comm from, MPI_Comm to) {
  mmpi__attr_t *a;
  int rc = MPI_SUCCESS;

  for (a = from->attrs; a != NULL && rc == MPI_SUCCESS; a = a->next) {
    keyval_t *kv = keyval_get(a->keyval);
    void *out = NULL;
    int flag = 0;
    if (kv == NULL)
      continue;
    rc = kv->copy(from, a->keyval, kv->extra, a->value, &out, &flag);
    if (rc == MPI_SUCCESS && flag)
      rc = set_attr(to, a->keyval, out);
  }
  return rc;
}

/* ---- Communicators --------------------------------------------------------
 */

/* Wraps libminimp's `mc` (taken over) into a communicator that inherits
 * `parent`'s error handler. MPI_ERR_NO_MEM frees mc. */
static int comm_wrap(mmp_comm_t *mc, MPI_Comm parent, MPI_Comm *out) {
  MPI_Comm c = calloc(1, sizeof(*c));
  int *w = NULL, i, rc = MPI_SUCCESS;

  if (c != NULL) {
    atomic_init(&c->refs, 1);
    c->mc = mc;
    c->rank = mmp_comm_rank(mc);
    c->size = mmp_comm_size(mc);
    w = malloc((size_t)c->size * sizeof(int));
  }
  if (w == NULL) {
    rc = MPI_ERR_NO_MEM;
  } else {
    for (i = 0; i < c->size; i++)
      w[i] = mmp_comm_world_rank(mc, i);
    if ((c->group = mmpi__group_new(c->size, w)) == NULL)
      rc = MPI_ERR_NO_MEM;
  }
  free(w);
  if (rc != MPI_SUCCESS) {
    free(c);
    (void)mmp_comm_free(&mc);
    return rc;
  }
  pthread_mutex_lock(&mmpi__mu);
  c->eh = parent->eh;
  mmpi__errh_retain(c->eh);
  pthread_mutex_unlock(&mmpi__mu);
  *out = c;
  return MPI_SUCCESS;
}

/* Frees a communicator made by comm_wrap (its attributes already gone),
 * or only marks it freed while requests on it are under way: the last
 * one frees it (mmpi__comm_release). libminimp defers its own free the
 * same way. */
static void comm_destroy(MPI_Comm c) {
  if (c->mc != NULL)
    (void)mmp_comm_free(&c->mc);
  c->freed = 1;
  mmpi__comm_release(c);
}

void mmpi__comm_retain(MPI_Comm c) {
  if (!c->predefined)
    atomic_fetch_add(&c->refs, 1);
}

void mmpi__comm_release(MPI_Comm c) {
  if (c->predefined || atomic_fetch_sub(&c->refs, 1) != 1)
    return;
  mmpi__group_release(c->group);
  mmpi__errh_release(c->eh);
  free(c);
}

int mmpi__comm_init(void) {
  mmp_comm_t *w = mmp_comm_world(), *self = NULL;
  int me = mmp_comm_rank(w), p = mmp_comm_size(w), *ranks, i, rc;

  mmpi_comm_world.mc = w;
  mmpi_comm_world.rank = me;
  mmpi_comm_world.size = p;
  if ((ranks = malloc((size_t)p * sizeof(int))) == NULL)
    return MPI_ERR_NO_MEM;
  for (i = 0; i < p; i++)
    ranks[i] = i;
  mmpi_comm_world.group = mmpi__group_new(p, ranks);
  free(ranks);
  if (mmpi_comm_world.group == NULL)
    return MPI_ERR_NO_MEM;
  /* Collective over the world: every rank alone in its own color. */
  if ((rc = mmp_comm_split(w, me, 0, &self)) != 0)
    return mmpi__code(rc);
  mmpi_comm_self.mc = self;
  mmpi_comm_self.rank = 0;
  mmpi_comm_self.size = 1;
  if ((mmpi_comm_self.group = mmpi__group_new(1, &me)) == NULL)
    return MPI_ERR_NO_MEM;
  return MPI_SUCCESS;
}

void mmpi__comm_fini(void) {
  MPI_Comm c[2] = {MPI_COMM_SELF, MPI_COMM_WORLD};
  int i;

  /* MPI_COMM_SELF's attributes go first, as if it were freed. */
  pthread_mutex_lock(&mmpi__mu);
  for (i = 0; i < 2; i++)
    (void)delete_all_attrs(c[i]);
  pthread_mutex_unlock(&mmpi__mu);
  (void)mmp_comm_free(&mmpi_comm_self.mc);
  mmpi_comm_world.mc = NULL;
  for (i = 0; i < 2; i++) {
    mmpi__group_release(c[i]->group);
    c[i]->group = NULL;
    mmpi__errh_release(c[i]->eh);
    c[i]->eh = MPI_ERRORS_ARE_FATAL;
  }
  pthread_mutex_lock(&mmpi__mu);
  free(keyvals);
  keyvals = NULL;
  nkeyvals = 0;
  pthread_mutex_unlock(&mmpi__mu);
}

int MPI_Comm_rank(MPI_Comm comm, int *rank) {
  if (!mmpi__comm_ok(comm))
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_COMM, __func__);
  if (rank == NULL)
    return mmpi__raise(comm, MPI_ERR_ARG, __func__);
  *rank = comm->rank;
  return MPI_SUCCESS;
}

int MPI_Comm_size(MPI_Comm comm, int *size) {
  if (!mmpi__comm_ok(comm))
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_COMM, __func__);
  if (size == NULL)
    return mmpi__raise(comm, MPI_ERR_ARG, __func__);
  *size = comm->size;
  return MPI_SUCCESS;
}

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm) {
  mmp_comm_t *mc = NULL;
  MPI_Comm c;
  int rc;

  if (!mmpi__comm_ok(comm))
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_COMM, __func__);
  if (newcomm == NULL)
    return mmpi__raise(comm, MPI_ERR_ARG, __func__);
  if ((rc = mmp_comm_dup(comm->mc, &mc)) != 0)
    return mmpi__fail(comm, rc, __func__);
  if ((rc = comm_wrap(mc, comm, &c)) != MPI_SUCCESS)
    return mmpi__raise(comm, rc, __func__);
  pthread_mutex_lock(&mmpi__mu);
  rc = copy_attrs(comm, c);
  if (rc != MPI_SUCCESS)
    (void)delete_all_attrs(c);
  pthread_mutex_unlock(&mmpi__mu);
  if (rc != MPI_SUCCESS) {
    comm_destroy(c);
    *newcomm = MPI_COMM_NULL;
    return mmpi__raise(comm, rc, __func__);
  }
  *newcomm = c;
  return MPI_SUCCESS;
}

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm) {
  mmp_comm_t *mc = NULL;
  int rc;

  if (!mmpi__comm_ok(comm))
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_COMM, __func__);
  if (newcomm == NULL || (color < 0 && color != MPI_UNDEFINED))
    return mmpi__raise(comm, MPI_ERR_ARG, __func__);
  _Static_assert(MPI_UNDEFINED == MMP_UNDEFINED, "the same 'no color'");
  if ((rc = mmp_comm_split(comm->mc, color, key, &mc)) != 0)
    return mmpi__fail(comm, rc, __func__);
  *newcomm = MPI_COMM_NULL;
  if (mc == NULL)
    return MPI_SUCCESS;
  return mmpi__raise(comm, comm_wrap(mc, comm, newcomm), __func__);
}

int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm) {
  mmp_comm_t *mc = NULL;
  int *idx, *ranks, i, rc = MPI_SUCCESS;

  if (!mmpi__comm_ok(comm))
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_COMM, __func__);
  if (group == MPI_GROUP_NULL)
    return mmpi__raise(comm, MPI_ERR_GROUP, __func__);
  if (newcomm == NULL)
    return mmpi__raise(comm, MPI_ERR_ARG, __func__);
  *newcomm = MPI_COMM_NULL;
  /* Every rank passes the same group: all skip libminimp alike. */
  if (group->size == 0)
    return MPI_SUCCESS;
  idx = group_index(comm->group);
  ranks = malloc((size_t)group->size * sizeof(int));
  if (idx == NULL || ranks == NULL)
    rc = MPI_ERR_NO_MEM;
  for (i = 0; rc == MPI_SUCCESS && i < group->size; i++)
    if ((ranks[i] = idx[group->world[i]]) < 0)
      rc = MPI_ERR_GROUP; /* not a subgroup of comm's */
  free(idx);
  if (rc == MPI_SUCCESS) {
    rc = mmp_comm_create(comm->mc, group->size, ranks, &mc);
    rc = mmpi__code(rc);
  }
  free(ranks);
  if (rc == MPI_SUCCESS && mc != NULL)
    rc = comm_wrap(mc, comm, newcomm);
  return mmpi__raise(comm, rc, __func__);
}

int MPI_Comm_free(MPI_Comm *comm) {
  int rc;

  if (comm == NULL || !mmpi__comm_ok(*comm))
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_COMM, __func__);
  if ((*comm)->predefined)
    return mmpi__raise(*comm, MPI_ERR_COMM, __func__);
  pthread_mutex_lock(&mmpi__mu);
  rc = delete_all_attrs(*comm);
  pthread_mutex_unlock(&mmpi__mu);
  if (rc != MPI_SUCCESS)
    return mmpi__raise(*comm, rc, __func__);
  comm_destroy(*comm);
  *comm = MPI_COMM_NULL;
  return MPI_SUCCESS;
}

int MPI_Comm_compare(MPI_Comm comm1, MPI_Comm comm2, int *result) {
  int r;

  if (!mmpi__comm_ok(comm1) || !mmpi__comm_ok(comm2))
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_COMM, __func__);
  if (result == NULL)
    return mmpi__raise(comm1, MPI_ERR_ARG, __func__);
  if (comm1 == comm2) {
    *result = MPI_IDENT;
    return MPI_SUCCESS;
  }
  if ((r = members_compare(comm1->group, comm2->group)) < 0)
    return mmpi__raise(comm1, MPI_ERR_NO_MEM, __func__);
  *result = r == MPI_IDENT ? MPI_CONGRUENT : r;
  return MPI_SUCCESS;
}

int MPI_Comm_set_name(MPI_Comm comm, const char *comm_name) {
  if (!mmpi__comm_ok(comm))
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_COMM, __func__);
  if (comm_name == NULL)
    return mmpi__raise(comm, MPI_ERR_ARG, __func__);
  pthread_mutex_lock(&mmpi__mu);
  snprintf(comm->name, sizeof(comm->name), "%s", comm_name);
  pthread_mutex_unlock(&mmpi__mu);
  return MPI_SUCCESS;
}

int MPI_Comm_get_name(MPI_Comm comm, char *comm_name, int *resultlen) {
  if (!mmpi__comm_ok(comm))
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_COMM, __func__);
  if (comm_name == NULL || resultlen == NULL)
    return mmpi__raise(comm, MPI_ERR_ARG, __func__);
  pthread_mutex_lock(&mmpi__mu);
  snprintf(comm_name, MPI_MAX_OBJECT_NAME, "%s", comm->name);
  pthread_mutex_unlock(&mmpi__mu);
  *resultlen = (int)strlen(comm_name);
  return MPI_SUCCESS;
}

int MPI_Comm_test_inter(MPI_Comm comm, int *flag) {
  if (!mmpi__comm_ok(comm))
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_COMM, __func__);
  if (flag == NULL)
    return mmpi__raise(comm, MPI_ERR_ARG, __func__);
  *flag = 0; /* every communicator here is an intracommunicator */
  return MPI_SUCCESS;
}

int MPI_Comm_group(MPI_Comm comm, MPI_Group *group) {
  if (!mmpi__comm_ok(comm))
    return mmpi__raise(MPI_COMM_NULL, MPI_ERR_COMM, __func__);
  if (group == NULL)
    return mmpi__raise(comm, MPI_ERR_ARG, __func__);
  if (!comm->group->predefined)
    atomic_fetch_add(&comm->group->refs, 1);
  *group = comm->group;
  return MPI_SUCCESS;
}
