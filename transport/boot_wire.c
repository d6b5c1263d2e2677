/* SPDX-License-Identifier: MIT */
/*
 * The codec of the bootstrap protocol (boot.h): the 16-byte message header,
 * a bounds-checked reader over a received body and a growable writer for
 * outgoing messages. It touches no socket, so the server, the client and
 * the unit tests share it, and every length that arrives from the network
 * is checked here before anyone uses it.
 */
#include "boot.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "minimp.h"
#include "util.h"

void mmp__boot_hdr_encode(const mmp__boot_hdr_t *h,
                          uint8_t out[MMP__BOOT_HDR_SIZE]) {
  mmp__put_u32(out + 0, MMP__BOOT_MAGIC);
  out[4] = MMP__BOOT_VERSION;
  out[5] = h->type;
  mmp__put_u16(out + 6, 0);
  mmp__put_u32(out + 8, h->id);
  mmp__put_u32(out + 12, h->len);
}

int mmp__boot_hdr_decode(const uint8_t in[MMP__BOOT_HDR_SIZE],
                         uint32_t max_body, mmp__boot_hdr_t *h,
                         const char **why) {
  if (mmp__get_u32(in) != MMP__BOOT_MAGIC) {
    *why = "bad magic";
    return MMP_EPROTO;
  }
  if (in[4] == 1) {
    *why = "peer speaks bootstrap protocol version 1, which sent the job "
           "key in clear (an older libminimp); this one speaks version 2";
    return MMP_EPROTO;
  }
  if (in[4] != MMP__BOOT_VERSION) {
    *why = "unsupported protocol version";
    return MMP_EPROTO;
  }
  if (in[5] == 0 || in[5] > MMP__B_TYPE_MAX) {
    *why = "unknown message type";
    return MMP_EPROTO;
  }
  if (mmp__get_u16(in + 6) != 0) {
    *why = "reserved header field is not zero";
    return MMP_EPROTO;
  }
  h->type = in[5];
  h->id = mmp__get_u32(in + 8);
  h->len = mmp__get_u32(in + 12);
  if (h->len > max_body) {
    *why = "body length exceeds the maximum";
    return MMP_ETOOBIG;
  }
  return 0;
}

/* ---- Reader ------------------------------------------------------------ */

void mmp__boot_rd_init(mmp__boot_rd_t *r, const void *body, size_t len) {
  r->p = body;
  r->left = len;
  r->bad = 0;
}

/* Consumes n bytes; on a short body marks the cursor bad and consumes all. */
static const uint8_t *rd_take(mmp__boot_rd_t *r, size_t n) {
  const uint8_t *p = r->p;

  if (r->bad || n > r->left) {
    r->bad = 1;
    r->p += r->left;
    r->left = 0;
    return NULL;
  }
  r->p += n;
  r->left -= n;
  return p;
}

uint32_t mmp__boot_rd_u32(mmp__boot_rd_t *r) {
  const uint8_t *p = rd_take(r, 4);
  return p != NULL ? mmp__get_u32(p) : 0;
}

size_t mmp__boot_rd_str(mmp__boot_rd_t *r, const char **s, size_t max) {
  const uint8_t *p = rd_take(r, 2);
  size_t n = p != NULL ? mmp__get_u16(p) : 0;
  const uint8_t *b;

  *s = "";
  if (p == NULL)
    return 0;
  if (n > max) {
    r->bad = 1;
    return 0;
  }
  b = rd_take(r, n);
  if (b == NULL)
    return 0;
  *s = (const char *)b;
  return n;
}

size_t mmp__boot_rd_blob(mmp__boot_rd_t *r, const uint8_t **b, size_t max) {
  static const uint8_t empty[1];
  const uint8_t *p = rd_take(r, 4);
  size_t n = p != NULL ? mmp__get_u32(p) : 0;
  const uint8_t *d;

  *b = empty;
  if (p == NULL)
    return 0;
  if (n > max) {
    r->bad = 1;
    return 0;
  }
  d = rd_take(r, n);
  if (d == NULL)
    return 0;
  *b = d;
  return n;
}

const uint8_t *mmp__boot_rd_raw(mmp__boot_rd_t *r, size_t n) {
  return rd_take(r, n);
}

/* ---- Writer ------------------------------------------------------------ */

void mmp__boot_wr_init(mmp__boot_wr_t *w) {
  w->buf = NULL;
  w->len = MMP__BOOT_HDR_SIZE;
  w->cap = 0;
  w->oom = 0;
}

/* Makes room for n more bytes; returns where they go, or NULL (oom set). */
static uint8_t *wr_room(mmp__boot_wr_t *w, size_t n) {
  size_t need, cap;
  uint8_t *nb;

  if (w->oom)
    return NULL;
  /* A body longer than the header can describe is a failure, not a wrap. */
  if (n > UINT32_MAX || w->len - MMP__BOOT_HDR_SIZE > UINT32_MAX - n) {
    w->oom = 1;
    return NULL;
  }
  need = w->len + n;
  if (need > w->cap) {
    cap = w->cap != 0 ? w->cap : 128;
    while (cap < need)
      cap *= 2;
    nb = realloc(w->buf, cap);
    if (nb == NULL) {
      w->oom = 1;
      return NULL;
    }
    w->buf = nb;
    w->cap = cap;
  }
  nb = w->buf + w->len;
  w->len = need;
  return nb;
}

void mmp__boot_wr_u32(mmp__boot_wr_t *w, uint32_t v) {
  uint8_t *p = wr_room(w, 4);
  if (p != NULL)
    mmp__put_u32(p, v);
}

void mmp__boot_wr_str(mmp__boot_wr_t *w, const char *s, size_t n) {
  uint8_t *p;

  /* Callers check string lengths against the protocol limits first. */
  assert(n <= UINT16_MAX);
  p = wr_room(w, 2 + n);
  if (p == NULL)
    return;
  mmp__put_u16(p, (uint16_t)n);
  if (n > 0)
    memcpy(p + 2, s, n);
}

void mmp__boot_wr_blob(mmp__boot_wr_t *w, const void *b, size_t n) {
  uint8_t *p;

  if (n > UINT32_MAX) {
    w->oom = 1;
    return;
  }
  p = wr_room(w, 4 + n);
  if (p == NULL)
    return;
  mmp__put_u32(p, (uint32_t)n);
  if (n > 0)
    memcpy(p + 4, b, n);
}

void mmp__boot_wr_raw(mmp__boot_wr_t *w, const void *b, size_t n) {
  uint8_t *p = wr_room(w, n);

  if (p != NULL && n > 0)
    memcpy(p, b, n);
}

int mmp__boot_wr_finish(mmp__boot_wr_t *w, uint8_t type, uint32_t id) {
  mmp__boot_hdr_t h;

  /* An empty body still needs the buffer that holds the header. */
  if (w->buf == NULL && !w->oom) {
    w->buf = malloc(MMP__BOOT_HDR_SIZE);
    if (w->buf == NULL)
      w->oom = 1;
    w->cap = MMP__BOOT_HDR_SIZE;
  }
  if (w->oom) {
    free(w->buf);
    w->buf = NULL;
    w->len = w->cap = 0;
    return MMP_ENOMEM;
  }
  h.type = type;
  h.id = id;
  h.len = (uint32_t)(w->len - MMP__BOOT_HDR_SIZE);
  mmp__boot_hdr_encode(&h, w->buf);
  return 0;
}

static void rx_feed_sealed(mmp__boot_rx_t *rx, const uint8_t *p, size_t n,
                           const mmp__boot_rx_ops_t *ops, void *ctx);

/* Parses clear bytes (a plain stream, or opened records) into messages.
 * Where a message's handler seals the stream, what follows is records. */
static void rx_feed_clear(mmp__boot_rx_t *rx, const uint8_t *p, size_t n,
                          const mmp__boot_rx_ops_t *ops, void *ctx,
                          int opened) {
  const char *why = NULL;
  size_t take;
  int rc;

  while (n > 0 && !ops->closed(ctx)) {
    if (rx->seal != NULL && !opened) {
      rx_feed_sealed(rx, p, n, ops, ctx);
      return;
    }
    if (rx->body == NULL) {
      take = MMP__BOOT_HDR_SIZE - rx->hhave;
      take = take < n ? take : n;
      memcpy(rx->hbuf + rx->hhave, p, take);
      rx->hhave += take;
      p += take;
      n -= take;
      if (rx->hhave < MMP__BOOT_HDR_SIZE)
        return;
      rx->hhave = 0;
      rc = ops->header(ctx, rx, &why);
      if (rc != 0) {
        ops->error(ctx, rc, why);
        return;
      }
      /* The common case: the whole body is in this read; no copy. */
      if (n >= rx->hdr.len) {
        ops->message(ctx, &rx->hdr, p);
        p += rx->hdr.len;
        n -= rx->hdr.len;
        continue;
      }
      rx->bhave = 0;
      rx->body = malloc(rx->hdr.len ? rx->hdr.len : 1); /* capped above */
      if (rx->body == NULL) {
        ops->error(ctx, MMP_ENOMEM, "out of memory");
        return;
      }
    }
    take = rx->hdr.len - rx->bhave;
    take = take < n ? take : n;
    memcpy(rx->body + rx->bhave, p, take);
    rx->bhave += take;
    p += take;
    n -= take;
    if (rx->bhave == rx->hdr.len) {
      uint8_t *body = rx->body;
      rx->body = NULL;
      ops->message(ctx, &rx->hdr, body);
      free(body);
    }
  }
}

/* Gathers records, opens each whole one and parses what it holds. */
static void rx_feed_sealed(mmp__boot_rx_t *rx, const uint8_t *p, size_t n,
                           const mmp__boot_rx_ops_t *ops, void *ctx) {
  const size_t cap = MMP__REC_MAX + MMP__REC_OVERHEAD;

  while (n > 0 && !ops->closed(ctx)) {
    size_t take = cap - rx->rhave < n ? cap - rx->rhave : n, off = 0;

    memcpy(rx->rec + rx->rhave, p, take);
    rx->rhave += take;
    p += take;
    n -= take;
    while (!ops->closed(ctx)) {
      const char *why = NULL;
      size_t plain = 0;
      long used = mmp__open(rx->seal, rx->rec + off, rx->rhave - off, rx->plain,
                            &plain, &why);
      if (used < 0) {
        ops->error(ctx, (int)used, why);
        return;
      }
      if (used == 0)
        break;
      off += (size_t)used;
      rx_feed_clear(rx, rx->plain, plain, ops, ctx, 1);
    }
    memmove(rx->rec, rx->rec + off, rx->rhave - off);
    rx->rhave -= off;
  }
}

void mmp__boot_rx_feed(mmp__boot_rx_t *rx, const uint8_t *p, size_t n,
                       const mmp__boot_rx_ops_t *ops, void *ctx) {
  rx_feed_clear(rx, p, n, ops, ctx, 0);
}

int mmp__boot_rx_seal(mmp__boot_rx_t *rx,
                      const uint8_t key[MMP__SESSION_KEY_LEN]) {
  assert(rx->seal == NULL);
  rx->seal = calloc(1, sizeof(*rx->seal));
  rx->rec = malloc(MMP__REC_MAX + MMP__REC_OVERHEAD);
  rx->plain = malloc(MMP__REC_MAX);
  if (rx->seal == NULL || rx->rec == NULL || rx->plain == NULL) {
    mmp__boot_rx_fini(rx);
    return MMP_ENOMEM;
  }
  memcpy(rx->seal->key, key, MMP__SESSION_KEY_LEN);
  rx->rhave = 0;
  return 0;
}

void mmp__boot_rx_fini(mmp__boot_rx_t *rx) {
  free(rx->body);
  rx->body = NULL;
  if (rx->seal != NULL)
    mmp__auth_wipe(rx->seal, sizeof(*rx->seal));
  if (rx->plain != NULL)
    mmp__auth_wipe(rx->plain, MMP__REC_MAX);
  free(rx->seal);
  free(rx->rec);
  free(rx->plain);
  rx->seal = NULL;
  rx->rec = rx->plain = NULL;
}

int mmp__boot_seal_msg(mmp__seal_t *tx, uint8_t **buf, size_t *len) {
  struct iovec iov = {*buf, *len};
  uint64_t size = mmp__seal_size(*len);
  uint8_t *out = malloc((size_t)size);

  if (out == NULL) {
    free(*buf);
    *buf = NULL;
    return MMP_ENOMEM;
  }
  /* One piece: records never span pieces, so no scratch is needed. */
  mmp__seal(tx, &iov, 1, *len, out, NULL);
  mmp__auth_wipe(*buf, *len);
  free(*buf);
  *buf = out;
  *len = (size_t)size;
  return 0;
}
