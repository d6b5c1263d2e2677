/* SPDX-License-Identifier: MIT */
/*
 * The progress engine: who runs the libuv loop, and when.
 *
 * libuv is single-threaded, yet messages must move while the application
 * computes, and a blocked receive must wake up as fast as the kernel can
 * deliver the bytes. So the loop has exactly one owner at a time, chosen
 * under engine.lock:
 *
 *  - An application thread that blocks in wait/recv/probe takes the loop
 *    and runs it itself (uv_run), so the data's arrival wakes that very
 *    thread: at most one wake-up per message. It polls (UV_RUN_NOWAIT)
 *    while frames keep moving and for MINIMP_SPIN_US after the last one,
 *    so ping-pongs and bulk transfers need no wake-up at all. On a machine
 *    with more ranks than CPUs every pass yields the CPU
 *    (MINIMP_SPIN_YIELD), so a peer with work runs first and the next
 *    frame is found without a wake-up.
 *  - A background progress thread takes the loop when no application
 *    thread has called the library for MINIMP_PROGRESS_GRACE_US, so eager
 *    data, rendezvous handshakes and large transfers keep moving while the
 *    application computes. It looks with an exponential back-off up to
 *    MINIMP_PROGRESS_CHECK_US, longer where ranks outnumber CPUs, because
 *    there each look preempts a rank. When an application thread needs
 *    the loop back it wakes the progress thread with uv_async_send and
 *    waits for the hand-over.
 *
 * The grace period makes ownership sticky: a thread that alternates
 * between short computations and waits keeps the loop and never pays a
 * hand-over. A cross-thread wake-up costs many loopback round trips, which
 * is why the progress thread does not own the loop for good. The design
 * is in docs/design/progress.md ("Why not a progress thread that always
 * owns the loop", "The design: the loop has one owner at a time"), the
 * figures behind it in docs/data/history/progress.md.
 *
 * Work that application threads create for the loop (queued frames,
 * connection requests, bootstrap calls) is posted as tasks or dirty peers
 * and signalled with uv_async_send; whoever owns the loop next runs it.
 */
#include <assert.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "internal.h"

/* Waits in a row outlasting the yielding spin before the next one skips
 * it (engine_drive). */
#define SPIN_SKIP_AFTER 2
/* While spinning with shared-memory peers, one pass in this many runs the
 * whole loop (TCP, timers, tasks of other threads); the others only look
 * at the rings, which costs a fraction of a loop pass (docs/design/progress.md,
 * "Shared memory"). A power of two. */
#define SPIN_LOOP_EVERY 16
/* A wait whose spin ran out and whose sleep then ended within twice the
 * spin was kept waiting by polling: the peer it waited for shared its
 * CPU (a loaded machine moves both ranks onto one CPU) and ran only once
 * the poller slept, or once its own spin ran out. The next blocking
 * waits sleep at once, SPIN_OFF_MIN of them the first time and twice as
 * many each time the wait that polls after them trips again, up to
 * SPIN_OFF_WAITS; each wait that ends within its spin halves the run, so
 * a lone stall costs few wake-ups and a lasting load few spins
 * (docs/design/progress.md, "Spinning on a loaded machine"). */
#define SPIN_OFF_MIN 8
#define SPIN_OFF_WAITS 256
/* Looks in a row that find a peer runnable on our CPU before the lower
 * rank of the two moves to another (engine_cpu_shared): in a ping-pong,
 * about as many round trips. */
#define MOVE_AFTER 64

static _Thread_local int tls_sleepy;

int mmp__progress_sleepy(int on) {
  int was = tls_sleepy;
  tls_sleepy = on;
  return was;
}

int mmp__in_loop(void) {
  return mmp__loop_current() != NULL;
}

/* Loop context, lock not held. One look at the transport the loop's own
 * polling does not serve (shared memory); see its poll() contract. */
static int engine_tp_poll(mmp__engine_t *e, int arm) {
  if (e->shm.tp == NULL || e->shm.ops->poll == NULL)
    return 0;
  return e->shm.ops->poll(e->shm.tp, arm);
}

/* Loop context, lock not held. Lets the loop sleep until something
 * happens: shared memory arms its doorbell first, and if it has work
 * instead, the loop only makes a pass. Returns 1 if it let the loop
 * sleep. */
static int engine_sleep(mmp__engine_t *e) {
  int work = engine_tp_poll(e, 1);

  uv_run(&e->loop, work ? UV_RUN_NOWAIT : UV_RUN_ONCE);
  return !work;
}

/* Loop context. Moves the calling thread off the CPU it
 * runs on, to another its affinity allows (the kernel picks which), and
 * gives it its affinity back: the kernel does not move a running thread
 * back, the load balancer may later. Returns 1 if it moved. */
static int engine_move(mmp__engine_t *e) {
  cpu_set_t was, away;
  int cpu = sched_getcpu(), now;

  if (cpu < 0 || sched_getaffinity(0, sizeof(was), &was) != 0 ||
      !CPU_ISSET(cpu, &was) || CPU_COUNT(&was) < 2)
    return 0;
  away = was;
  CPU_CLR(cpu, &away);
  if (sched_setaffinity(0, sizeof(away), &away) != 0)
    return 0;
  now = sched_getcpu();
  (void)sched_setaffinity(0, sizeof(was), &was);
  /* Published at once, so that the peer left behind does not find us on
   * its CPU and move too. */
  if (now >= 0 && e->shm.tp != NULL && e->shm.ops->cpu_shared != NULL)
    (void)e->shm.ops->cpu_shared(e->shm.tp, now);
  return now >= 0 && now != cpu;
}

/* Loop context, lock not held. 1 if a peer that shares memory with us is
 * runnable on the CPU we poll on (transport's cpu_shared). A pair that
 * stays on one CPU for MOVE_AFTER looks in a row, while this host has a
 * CPU per rank, is split: its lower rank moves to another CPU. Handing
 * the CPU over keeps both ranks warm in its cache, so the scheduler's
 * load balancer, which leaves such tasks where they are, would not split
 * them (docs/design/progress.md, "Sharing a CPU with a peer"). */
static int engine_cpu_shared(mmp__engine_t *e) {
  int cpu = sched_getcpu(), who;

  who = cpu < 0 ? -1 : e->shm.ops->cpu_shared(e->shm.tp, cpu);
  if (who < 0) {
    e->shared_looks = 0;
    return 0;
  }
  if (who > e->cfg.rank && !e->cfg.cpus_shared &&
      ++e->shared_looks >= MOVE_AFTER) {
    e->shared_looks = 0;
    if (engine_move(e)) {
      e->moves++;
      return 0;
    }
  }
  return 1;
}

/* Loop context. The spin of a wait whose peers' CPUs we do not see (TCP)
 * kept the peer off its CPU: where this host has a CPU per rank, the peer
 * most likely shares ours, where the kernel's wake-ups of sleeping ranks
 * gathered the two, and moving parts them for good where sleeping would
 * pay a wake-up at every hop. Moves at most once in SPIN_OFF_WAITS waits,
 * so that a machine busy with other work still gets the sleeping waits.
 * Returns 1 if it moved. */
static int engine_part_unseen(mmp__engine_t *e, int see) {
  if (see || e->cfg.cpus_shared || e->move_hold > 0)
    return 0;
  e->move_hold = SPIN_OFF_WAITS;
  if (!engine_move(e))
    return 0;
  e->moves++;
  return 1;
}

/* Loop context, lock not held; external progress only. Makes the
 * embedder's descriptor say whether progress is due before anything else
 * arrives: libuv's timers (the descriptor shows only libuv's sockets) and
 * callbacks it left pending are turned into the timerfd's expiry, and
 * shared memory arms its doorbell, as before any sleep. */
static void engine_ext_arm(mmp__engine_t *e) {
  struct itimerspec its;
  int ms;

  MMP__ASSERT_LOOP(e);
  MMP__ASSERT_UNLOCKED(e);
  if (e->ext_fd < 0)
    return;
  ms = engine_tp_poll(e, 1) ? 0 : uv_backend_timeout(&e->loop);
  memset(&its, 0, sizeof(its));
  if (ms == 0)
    its.it_value.tv_nsec = 1; /* due now; all zero would disarm */
  else if (ms > 0) {
    its.it_value.tv_sec = ms / 1000;
    its.it_value.tv_nsec = (long)(ms % 1000) * 1000000L;
  }
  timerfd_settime(e->ext_timer, 0, &its, NULL);
}

/* Counts a change of the loop's runner, for the progress thread's look
 * at whether anyone runs the loop (progress_main). Only the runner writes
 * it, and runners change under engine.lock: a load and a store suffice. */
static void loop_turn(mmp__engine_t *e) {
  uint64_t t = atomic_load_explicit(&e->loop_turns, memory_order_relaxed);
  atomic_store_explicit(&e->loop_turns, t + 1, memory_order_relaxed);
}

/* The calling thread becomes the one that runs the loop. The loop's owner
 * changes under engine.lock, so no other thread can be running it. */
static void loop_enter(mmp__engine_t *e) {
#ifndef NDEBUG
  uintptr_t was = atomic_exchange_explicit(&e->loop_thread, mmp__thread_self(),
                                           memory_order_relaxed);
  assert(was == 0);
#endif
  mmp__loop_enter(&e->loop);
  loop_turn(e);
}

static void loop_leave(mmp__engine_t *e) {
  loop_turn(e);
  mmp__loop_leave(&e->loop);
#ifndef NDEBUG
  uintptr_t was =
      atomic_exchange_explicit(&e->loop_thread, 0, memory_order_relaxed);
  assert(was == mmp__thread_self());
#endif
}

/* Loop context: runs posted tasks and pumps the queues of dirty peers. */
static void engine_async_cb(uv_async_t *h) {
  mmp__engine_t *e = h->data;

  MMP__ASSERT_LOOP(e);
  MMP__ASSERT_UNLOCKED(e);
  mmp__lock(e);
  for (;;) {
    mmp__list_t *it = mmp__list_head(&e->tasks);
    mmp__task_t *t;
    if (it == NULL)
      break;
    t = mmp__container_of(it, mmp__task_t, node);
    mmp__list_remove(it);
    /* The task may free itself and takes the lock as it needs. */
    mmp__unlock(e);
    t->fn(t->arg);
    mmp__lock(e);
  }
  mmp__p2p_pump_dirty_locked(e);
  mmp__unlock(e);
}

int mmp__engine_init(mmp__engine_t *e) {
  if (uv_loop_init(&e->loop) != 0)
    return MMP_ENOMEM;
  if (uv_async_init(&e->loop, &e->wakeup, engine_async_cb) != 0) {
    uv_loop_close(&e->loop);
    return MMP_ENOMEM;
  }
  e->wakeup.data = e;
  uv_timer_init(&e->loop, &e->timer);
  uv_timer_init(&e->loop, &e->heartbeat);
  e->heartbeat.data = e;
  uv_timer_init(&e->loop, &e->deadline_timer);
  e->deadline_timer.data = e;
  if (uv_mutex_init(&e->lock) != 0 || uv_cond_init(&e->cv) != 0 ||
      uv_cond_init(&e->prog_cv) != 0)
    return MMP_ENOMEM;
  mmp__list_init(&e->posted);
  mmp__list_init(&e->unexpected);
  mmp__list_init(&e->dirty);
  mmp__list_init(&e->tasks);
  mmp__list_init(&e->deadlines);
  e->owner = MMP__OWN_NONE;
  atomic_init(&e->lock_owner, 0);
  atomic_init(&e->loop_thread, 0);
  e->ext_fd = -1;
  e->ext_timer = -1;
  mmp__loop_share(&e->loop);
  return 0;
}

/* Of the time since the last look (at most CONTENDED_WINDOW_NS ago), the
 * share in which this thread was runnable but waited for a CPU, read
 * from /proc/thread-self/schedstat, must exceed 1/CONTENDED_SHARE for the
 * CPUs to count as contended. */
#define CONTENDED_SHARE 16
#define CONTENDED_WINDOW_NS 1000000000ull

static _Thread_local uint64_t tls_delay, tls_delay_at;

/* 1 if this thread has lately waited for a CPU for a noticeable share of
 * the time (other work contends for the CPUs); 0 if not, or if it cannot
 * tell (no earlier look in the window, nothing to read). */
static int cpu_contended(void) {
  char buf[96];
  unsigned long long run = 0, delay = 0;
  uint64_t now = uv_hrtime(), was = tls_delay, at = tls_delay_at;
  int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
  ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

  if (fd >= 0)
    close(fd);
  if (n <= 0)
    return 0;
  buf[n] = '\0';
  if (sscanf(buf, "%llu %llu", &run, &delay) != 2)
    return 0;
  tls_delay = delay;
  tls_delay_at = now;
  return at != 0 && now - at < CONTENDED_WINDOW_NS && delay >= was &&
         (delay - was) * CONTENDED_SHARE > now - at;
}

/*
 * Runs the loop as its owner until pred holds. Lock held on entry and on
 * return; released while uv_run runs. While frames keep moving, or for
 * spin_us after the last one moved, the loop is polled (UV_RUN_NOWAIT), so
 * a transfer in full flow never waits for a wake-up; once it has been idle
 * that long, the thread sleeps in epoll.
 *
 * Where polling yields (ranks share CPUs), a wait follows the ones before
 * it: after SPIN_SKIP_AFTER waits in a row that each outlasted the spin,
 * the next one sleeps at once, until a wait ends within spin_us again.
 * A rank woken from sleep that then spins through a long wait takes the
 * shared CPUs from the ranks still sending. Waits that end within the
 * spin, as in back-to-back collectives, keep spinning. The figures are in
 * docs/design/progress.md ("The design: the loop has one owner at a time").
 */
static void engine_drive(mmp__engine_t *e, int (*pred)(void *), void *arg) {
  uint64_t budget = (uint64_t)e->cfg.spin_us * 1000;
  uint64_t seen = e->activity;
  uint64_t idle_since = 0, start = e->cfg.spin_yield ? uv_hrtime() : 0;
  uint64_t spun_at = 0; /* when the spin ran out (not yielding) */
  uint64_t handoffs = 0, sleeps = 0;
  int fast = e->shm_pairs > 0;
  /* Where peers share memory with us we see on which CPU they poll, and
   * whether they sleep (docs/design/progress.md, "Sharing a CPU with a peer").
   */
  int see = fast && e->shm.ops->cpu_shared != NULL;
  int poll, passes = 0, yield = e->cfg.spin_yield && (!tls_sleepy || see);
  int handoff = 0; /* a peer waits for our CPU: yield it while polling */
  unsigned spins = 0;

  MMP__ASSERT_LOCKED(e);
  assert(e->owner == MMP__OWN_NONE);
  /* Where polling yields: not for bulk waits (mmp__progress_sleepy), nor
   * after long waits; unless the peers share memory with us, where a
   * sleeping wait makes the rank with the next hop's bytes pay a wake-up
   * and each hop's copy is the receiver's own work. */
  if (e->cfg.spin_yield && !see &&
      (tls_sleepy || e->long_waits >= SPIN_SKIP_AFTER))
    budget = 0;
  /* Nor where a spin kept the peer off its CPU (SPIN_OFF_WAITS). */
  if (!e->cfg.spin_yield && e->spin_off > 0 && budget > 0) {
    e->spin_off--;
    budget = 0;
  }
  poll = budget > 0;

  e->owner = MMP__OWN_APP;
  mmp__unlock(e);
  loop_enter(e);
  for (;;) {
    int quiet = 0;
    if (!poll)
      sleeps += (uint64_t)engine_sleep(e);
    else if (fast && (++spins & (SPIN_LOOP_EVERY - 1)) != 0)
      /* A look at the rings that found nothing changed nothing the
       * predicate reads, so the lock is skipped: what other threads
       * complete is seen at the next whole pass, at most 15 looks on. */
      quiet = !engine_tp_poll(e, 0) && e->activity == seen;
    else
      uv_run(&e->loop, UV_RUN_NOWAIT);
    if (!quiet) {
      mmp__lock(e);
      assert(e->owner == MMP__OWN_APP);
      e->polls += (uint64_t)poll;
      if (pred(arg))
        break;
      if (e->activity != seen) {
        seen = e->activity;
        poll = budget > 0; /* bytes moved: poll again, from now */
        passes = 0;
      }
      mmp__unlock(e);
    }
    /* A peer runnable on this CPU waits for it: the spin would keep it
     * from running, and so from answering. Looked at on the first pass
     * after activity, then every 16th. */
    if (poll && see && !yield && (passes & 15) == 0)
      handoff = engine_cpu_shared(e);
    if (poll && (yield || handoff)) {
      sched_yield(); /* a runnable peer on this CPU goes first */
      handoffs += (uint64_t)handoff;
    }
    /* Reading the clock costs as much as a poll on a VM: do it every 16th
     * pass; the first reading after activity starts the idle time (which
     * a wait that ends sooner, a ping-pong's, never reads at all). */
    if (poll && (++passes & 15) == 0) {
      uint64_t now = uv_hrtime();
      if (passes == 16)
        idle_since = now;
      else if (now - idle_since >= budget) {
        poll = 0;
        spun_at = now;
      }
    }
  }
  e->handoffs += handoffs;
  e->sleeps += sleeps;
  /* Woken soon after its spin: its peer ran only once it slept. Where the
   * peers' CPUs are seen, a peer on ours was given the CPU already
   * (handoff), and moving, not sleeping, parts the two: the spin kept a
   * peer waiting only if other work contends for the CPUs, which this
   * thread's own waits for a CPU show. */
  if (e->move_hold > 0)
    e->move_hold--;
  if (spun_at && !e->cfg.spin_yield && uv_hrtime() - spun_at < 2 * budget &&
      (!see || (!handoff && cpu_contended())) && !engine_part_unseen(e, see)) {
    int run = e->spin_off_run < SPIN_OFF_MIN ? SPIN_OFF_MIN : e->spin_off_run;
    e->spin_off = run;
    e->spin_off_run = run < SPIN_OFF_WAITS / 2 ? 2 * run : SPIN_OFF_WAITS;
    e->spin_offs++;
  } else if (!spun_at && budget > 0 && !e->cfg.spin_yield)
    e->spin_off_run /= 2;
  if (e->ext_fd >= 0) {
    /* Shared memory's poll calls back into the runtime, which locks. */
    mmp__unlock(e);
    engine_ext_arm(e);
    mmp__lock(e);
  }
  loop_leave(e);
  if (yield) {
    int spun_out = uv_hrtime() - start > (uint64_t)e->cfg.spin_us * 1000;
    e->long_waits = spun_out ? e->long_waits + (e->long_waits < 255) : 0;
  }
  e->owner = MMP__OWN_NONE;
  if (e->waiters > 0)
    uv_cond_broadcast(&e->cv);
}

void mmp__progress_until(mmp__engine_t *e, int (*pred)(void *), void *arg) {
  MMP__ASSERT_UNLOCKED(e);
  assert(!mmp__in_loop()); /* it would wait for itself */
  mmp__lock(e);
  if (pred(arg)) {
    mmp__unlock(e);
    return;
  }
  e->claims++;
  while (!pred(arg)) {
    if (e->owner == MMP__OWN_NONE) {
      engine_drive(e, pred, arg);
      continue;
    }
    /* The progress thread sleeps inside uv_run: make it hand over. Another
     * application thread owning the loop will complete our request too. */
    if (e->owner == MMP__OWN_PROGRESS)
      uv_async_send(&e->wakeup);
    e->waiters++;
    mmp__cond_wait(e, &e->cv);
    assert(e->waiters > 0);
    e->waiters--;
  }
  assert(e->claims > 0);
  e->claims--;
  e->app_calls++;
  mmp__unlock(e);
}

/* Loop context, lock not held. Passes over the loop without blocking.
 * For an embedder's loop it goes on while bytes keep moving (up to a
 * bound), because libuv registers the sockets a pass's callbacks start
 * watching only at the next pass; then the descriptor is re-armed. */
static void engine_passes(mmp__engine_t *e) {
  uint64_t seen;
  int n = 0;

  MMP__ASSERT_LOOP(e);
  do {
    seen = e->activity;
    uv_run(&e->loop, UV_RUN_NOWAIT);
  } while (e->ext_fd >= 0 && (e->activity != seen || n == 0) && ++n < 16);
  engine_ext_arm(e);
}

void mmp__progress_poke(mmp__engine_t *e) {
  MMP__ASSERT_UNLOCKED(e);
  if (mmp__in_loop())
    return;
  mmp__lock(e);
  if (e->owner == MMP__OWN_NONE) {
    e->owner = MMP__OWN_APP;
    mmp__unlock(e);
    loop_enter(e);
    engine_passes(e);
    loop_leave(e);
    mmp__lock(e);
    assert(e->owner == MMP__OWN_APP);
    e->owner = MMP__OWN_NONE;
    if (e->waiters > 0)
      uv_cond_broadcast(&e->cv);
  }
  /* Activity even when the progress thread holds the loop: it then hands
   * the loop back once its uv_run returns, and a polling application
   * drives progress itself again instead of through its wake-ups. */
  e->app_calls++;
  mmp__unlock(e);
}

int mmp__engine_external(mmp__engine_t *e) {
  struct epoll_event ev;
  struct itimerspec its;

  assert(!e->thread_started); /* the two ways exclude each other */
  e->ext_timer = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  e->ext_fd = epoll_create1(EPOLL_CLOEXEC);
  if (e->ext_timer < 0 || e->ext_fd < 0)
    return MMP_EIO;
  memset(&ev, 0, sizeof(ev));
  ev.events = EPOLLIN;
  if (epoll_ctl(e->ext_fd, EPOLL_CTL_ADD, e->ext_timer, &ev) != 0 ||
      epoll_ctl(e->ext_fd, EPOLL_CTL_ADD, uv_backend_fd(&e->loop), &ev) != 0)
    return MMP_EIO;
  /* Due at once: the first mmp_progress() sets it from libuv's timers. */
  memset(&its, 0, sizeof(its));
  its.it_value.tv_nsec = 1;
  timerfd_settime(e->ext_timer, 0, &its, NULL);
  return 0;
}

int mmp_progress_fd(void) {
  mmp__engine_t *e = mmp__eng;

  if (e == NULL)
    return mmp__not_init(__func__);
  return e->ext_fd >= 0 ? e->ext_fd : MMP_ENOTSUP;
}

int mmp_progress(void) {
  mmp__engine_t *e = mmp__eng;
  uint64_t expirations;

  if (e == NULL)
    return mmp__not_init(__func__);
  /* Called back from the loop (a user operation): it is running already. */
  if (mmp__in_loop())
    return MMP_EINVAL;
  /* The expiry is consumed here; the next pass sets the timer again. */
  if (e->ext_timer >= 0 &&
      read(e->ext_timer, &expirations, sizeof(expirations)) < 0)
    expirations = 0;
  mmp__progress_poke(e);
  return 0;
}

typedef struct engine_call_s {
  mmp__task_t task;
  mmp__engine_t *e;
  mmp__task_fn fn;
  void *arg;
  int done;
} engine_call_t;

/* Loop context (a task), lock not held. */
static void engine_call_task(void *arg) {
  engine_call_t *c = arg;

  MMP__ASSERT_LOOP(c->e);
  c->fn(c->arg);
  mmp__lock(c->e);
  c->done = 1;
  mmp__engine_notify_locked(c->e);
  mmp__unlock(c->e);
}

static int engine_call_done(void *arg) {
  return ((engine_call_t *)arg)->done;
}

void mmp__engine_call(mmp__engine_t *e, mmp__task_fn fn, void *arg) {
  engine_call_t c;

  MMP__ASSERT_UNLOCKED(e);
  c.e = e;
  c.fn = fn;
  c.arg = arg;
  c.done = 0;
  mmp__lock(e);
  mmp__engine_post_locked(e, &c.task, engine_call_task, &c);
  mmp__unlock(e);
  mmp__progress_until(e, engine_call_done, &c);
}

void mmp__engine_post_locked(mmp__engine_t *e, mmp__task_t *t, mmp__task_fn fn,
                             void *arg) {
  MMP__ASSERT_LOCKED(e);
  t->fn = fn;
  t->arg = arg;
  mmp__list_insert_tail(&e->tasks, &t->node);
  uv_async_send(&e->wakeup);
}

/* ---- One-shot timers ---------------------------------------------------- */

typedef struct engine_timer_s {
  uv_timer_t h;
  mmp__task_t task;
  mmp__engine_t *e;
  uint64_t ms;
  void (*cb)(void *arg);
  void *arg;
} engine_timer_t;

static void timer_closed(uv_handle_t *h) {
  free(h->data);
}

/* Loop context, lock not held. */
static void timer_fired(uv_timer_t *h) {
  engine_timer_t *t = h->data;

  MMP__ASSERT_LOOP(t->e);
  MMP__ASSERT_UNLOCKED(t->e);
  mmp__lock(t->e);
  t->cb(t->arg);
  mmp__unlock(t->e);
  uv_close((uv_handle_t *)h, timer_closed);
}

/* Loop context (a task), lock not held: only the loop's owner calls libuv. */
static void timer_arm(void *arg) {
  engine_timer_t *t = arg;

  MMP__ASSERT_LOOP(t->e);
  MMP__ASSERT_UNLOCKED(t->e);
  uv_timer_init(&t->e->loop, &t->h);
  t->h.data = t;
  uv_timer_start(&t->h, timer_fired, t->ms, 0);
}

int mmp__timer_start_locked(mmp__engine_t *e, uint64_t ms,
                            void (*cb)(void *arg), void *arg) {
  engine_timer_t *t;

  MMP__ASSERT_LOCKED(e);
  t = calloc(1, sizeof(*t));
  if (t == NULL)
    return MMP_ENOMEM;
  t->e = e;
  t->ms = ms;
  t->cb = cb;
  t->arg = arg;
  mmp__engine_post_locked(e, &t->task, timer_arm, t);
  return 0;
}

/* ---- Cancellable deadlines ---------------------------------------------- */

/* Lock held. The earliest armed deadline, or 0 for none. */
static uint64_t deadline_next_locked(mmp__engine_t *e) {
  mmp__list_t *it;
  uint64_t next = 0;

  mmp__list_foreach(it, &e->deadlines) {
    mmp__deadline_t *d = mmp__container_of(it, mmp__deadline_t, node);
    if (next == 0 || d->due < next)
      next = d->due;
  }
  return next;
}

static void deadline_fired(uv_timer_t *h);

/* Loop context, lock held. Points the engine's timer at the earliest
 * deadline. */
static void deadline_rearm_locked(mmp__engine_t *e) {
  uint64_t next = deadline_next_locked(e), now = uv_hrtime();

  MMP__ASSERT_LOOP(e);
  if (next == 0)
    uv_timer_stop(&e->deadline_timer);
  else /* rounded up: firing early would only arm it again */
    uv_timer_start(&e->deadline_timer, deadline_fired,
                   next > now ? (next - now + 999999) / 1000000 : 0, 0);
}

/* Loop context: runs what is due. A callback may start or stop others,
 * hence the fresh look after each. */
static void deadline_fired(uv_timer_t *h) {
  mmp__engine_t *e = h->data;
  mmp__list_t *it;
  int again = 1;

  MMP__ASSERT_LOOP(e);
  mmp__lock(e);
  while (again) {
    uint64_t now = uv_hrtime();
    again = 0;
    mmp__list_foreach(it, &e->deadlines) {
      mmp__deadline_t *d = mmp__container_of(it, mmp__deadline_t, node);
      if (d->due <= now) {
        mmp__list_remove(&d->node);
        d->armed = 0;
        d->cb(d->arg);
        again = 1;
        break;
      }
    }
  }
  deadline_rearm_locked(e);
  mmp__unlock(e);
}

/* Loop context (a task), lock not held. */
static void deadline_task(void *arg) {
  mmp__engine_t *e = arg;

  mmp__lock(e);
  e->deadline_posted = 0;
  deadline_rearm_locked(e);
  mmp__unlock(e);
}

void mmp__deadline_start_locked(mmp__engine_t *e, mmp__deadline_t *d,
                                unsigned ms, void (*cb)(void *arg), void *arg) {
  MMP__ASSERT_LOCKED(e);
  assert(!d->armed);
  d->due = uv_hrtime() + (uint64_t)ms * 1000000;
  d->cb = cb;
  d->arg = arg;
  d->armed = 1;
  mmp__list_insert_tail(&e->deadlines, &d->node);
  /* Only the loop's owner may set the timer. */
  if (!e->deadline_posted) {
    e->deadline_posted = 1;
    mmp__engine_post_locked(e, &e->deadline_task, deadline_task, e);
  }
}

void mmp__deadline_stop_locked(mmp__engine_t *e, mmp__deadline_t *d) {
  MMP__ASSERT_LOCKED(e);
  if (d->armed) {
    mmp__list_remove(&d->node);
    d->armed = 0;
  }
}

void mmp__engine_notify_locked(mmp__engine_t *e) {
  MMP__ASSERT_LOCKED(e);
  if (e->waiters > 0)
    uv_cond_broadcast(&e->cv);
  /* An owner asleep in uv_run would not see a change made elsewhere. */
  if (!mmp__in_loop() && e->owner != MMP__OWN_NONE)
    uv_async_send(&e->wakeup);
}

static void progress_main(void *arg) {
  mmp__engine_t *e = arg;
  uint64_t grace = (uint64_t)e->cfg.grace_us * 1000;
  uint64_t backoff = grace, cap;
  /* The heartbeat's period (init.c), in ns; 0 without a heartbeat. */
  uint64_t starve = e->cfg.peer_timeout_ms == 0 ? 0
                    : e->cfg.peer_timeout_ms < 8
                        ? 1000000
                        : (uint64_t)e->cfg.peer_timeout_ms / 8 * 1000000;
  /* When app_calls and loop_turns were last seen to move: reading a clock
   * at every call would cost each message more than the rest of its
   * handling, so the calls are counted and timed here, at each look. An
   * idle spell is then noticed up to one look late. */
  uint64_t calls_seen, turns_seen, calls_at, turns_at;
  sigset_t all;

  /* Signals belong to the application's threads. Blocking SIGPIPE here
   * also keeps a write to a dead peer from killing the process. */
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL);

  mmp__lock(e);
  calls_seen = e->app_calls;
  turns_seen = atomic_load_explicit(&e->loop_turns, memory_order_relaxed);
  calls_at = turns_at = uv_hrtime();
  while (!e->stop) {
    uint64_t now = uv_hrtime(), idle, unrun;
    uint64_t turns = atomic_load_explicit(&e->loop_turns, memory_order_relaxed);
    if (e->app_calls != calls_seen) {
      calls_seen = e->app_calls;
      calls_at = now;
    }
    if (turns != turns_seen) {
      turns_seen = turns;
      turns_at = now;
    }
    idle = now - calls_at;
    unrun = now - turns_at;
    /* An application busy in the library without waiting (posting many
     * requests) runs no loop: nobody reads, and peers that hear nothing
     * for MINIMP_PEER_TIMEOUT_MS declare this rank lost. So the loop gets
     * one pass at least every heartbeat period, busy or not. */
    int starved = starve > 0 && unrun >= starve;
    if (e->owner == MMP__OWN_NONE && e->claims == 0 &&
        (idle >= grace || starved)) {
      e->owner = MMP__OWN_PROGRESS;
      mmp__unlock(e);
      loop_enter(e);
      if (idle >= grace)
        engine_sleep(e);
      else
        uv_run(&e->loop, UV_RUN_NOWAIT);
      loop_leave(e);
      mmp__lock(e);
      assert(e->owner == MMP__OWN_PROGRESS);
      e->owner = MMP__OWN_NONE;
      if (e->waiters > 0)
        uv_cond_broadcast(&e->cv);
      backoff = grace;
      continue;
    }
    /* The application is using the library: look again later, less and
     * less often, so that these checks cost it (almost) nothing. Once it
     * goes quiet, the loop is taken over within grace + backoff. */
    if (e->owner == MMP__OWN_NONE && e->claims == 0 && grace - idle > backoff)
      backoff = grace - idle;
    if (starve > 0 && backoff > starve)
      backoff = starve;
    mmp__cond_timedwait(e, &e->prog_cv, backoff);
    e->checks++;
    cap = (uint64_t)e->cfg.check_us * 1000; /* may change at init */
    if (starve > 0 && starve < cap)
      cap = starve;
    backoff = backoff * 2 < cap ? backoff * 2 : cap;
  }
  mmp__unlock(e);
}

int mmp__engine_start_thread(mmp__engine_t *e) {
  uv_thread_options_t opts;

  opts.flags = UV_THREAD_HAS_STACK_SIZE;
  opts.stack_size = 256 * 1024;
  e->stop = 0;
  if (uv_thread_create_ex(&e->thread, &opts, progress_main, e) != 0)
    return MMP_EINTERNAL;
  e->thread_started = 1;
  return 0;
}

void mmp__engine_stop_thread(mmp__engine_t *e) {
  MMP__ASSERT_UNLOCKED(e);
  assert(!mmp__in_loop());
  if (e->thread_started) {
    mmp__lock(e);
    e->stop = 1;
    uv_cond_signal(&e->prog_cv);
    mmp__unlock(e);
    uv_async_send(&e->wakeup);
    uv_thread_join(&e->thread);
    e->thread_started = 0;
  }
  /* The loop is this thread's alone from now on. */
  assert(e->owner == MMP__OWN_NONE);
  loop_enter(e);
}

static void engine_closed(uv_handle_t *h) {
  (void)h;
}

void mmp__run_loop(mmp__engine_t *e, uv_run_mode mode) {
  MMP__ASSERT_LOOP(e);
  MMP__ASSERT_UNLOCKED(e);
  uv_run(&e->loop, mode);
}

void mmp__engine_fini(mmp__engine_t *e) {
  MMP__ASSERT_LOOP(e);
  MMP__ASSERT_UNLOCKED(e);
  uv_close((uv_handle_t *)&e->timer, engine_closed);
  uv_close((uv_handle_t *)&e->heartbeat, engine_closed);
  uv_close((uv_handle_t *)&e->deadline_timer, engine_closed);
  uv_close((uv_handle_t *)&e->wakeup, engine_closed);
  /* Whatever handles remain are closing; let their callbacks run. */
  uv_run(&e->loop, UV_RUN_DEFAULT);
  loop_leave(e);
  mmp__loop_share(NULL);
  if (uv_loop_close(&e->loop) != 0)
    MMP__LOG(MMP__LOG_WARN, "event loop closed with handles still open");
  if (e->ext_fd >= 0)
    close(e->ext_fd);
  if (e->ext_timer >= 0)
    close(e->ext_timer);
  uv_cond_destroy(&e->prog_cv);
  uv_cond_destroy(&e->cv);
  uv_mutex_destroy(&e->lock);
}
