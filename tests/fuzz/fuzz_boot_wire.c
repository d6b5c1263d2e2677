/* SPDX-License-Identifier: MIT */
/*
 * Fuzz harness: the bootstrap protocol's codec (transport/boot_wire.c),
 * which both ends of the rendezvous and the launcher's control protocol
 * use on every byte they receive: the 16-byte header, the reassembler that
 * cuts a byte stream into messages, the bounds-checked body reader and the
 * writer.
 *
 * Input: one byte choosing the body limit (0 .. 64 KiB, or the protocol's
 * 1 MiB), four bytes seeding how the stream is cut into reads, then the
 * stream itself.
 *
 * Invariants:
 *  - the header decoder accepts only valid headers, and encoding what it
 *    decoded gives back the 16 bytes;
 *  - the reassembler delivers the same messages, and stops with the same
 *    error, whether the stream arrives whole, in random pieces or a byte
 *    at a time, and never delivers a body longer than the limit;
 *  - sealed (mmp__boot_rx_seal) and cut into records at random places, the
 *    stream gives the same messages; with one byte of it altered, a prefix
 *    of them and then a sealed-record error, never a message it did not
 *    hold;
 *  - the reader never yields bytes outside the body, a string or blob
 *    longer than its limit, or anything but zeros and empty strings past
 *    an error;
 *  - a body that reads cleanly as its type's fields (boot.h) is written
 *    back byte for byte by the writer (decode, encode: equal), and the
 *    writer's message decodes to the same header.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "minimp.h"
#include "transport/boot.h"
#include "transport/util.h"

/* ---- The header ---------------------------------------------------------- */

static void wire_check_header(const uint8_t in[MMP__BOOT_HDR_SIZE],
                              uint32_t max_body) {
  mmp__boot_hdr_t h;
  uint8_t out[MMP__BOOT_HDR_SIZE];
  const char *why = NULL;
  int rc = mmp__boot_hdr_decode(in, max_body, &h, &why);

  FUZZ_CHECK(rc == 0 || rc == MMP_EPROTO || rc == MMP_ETOOBIG);
  if (rc != 0) {
    FUZZ_CHECK(why != NULL && why[0] != '\0');
    if (rc == MMP_ETOOBIG)
      FUZZ_CHECK(mmp__get_u32(in + 12) > max_body);
    return;
  }
  FUZZ_CHECK(h.type >= 1 && h.type <= MMP__B_TYPE_MAX && h.len <= max_body);
  mmp__boot_hdr_encode(&h, out);
  FUZZ_CHECK(memcmp(in, out, sizeof(out)) == 0);
}

/* ---- Bodies: read as their type's fields, then written back ------------- */

/* A reader that checks every answer against the body it reads. */
typedef struct wire_rd_s {
  mmp__boot_rd_t rd;
  const uint8_t *body;
  size_t len;
} wire_rd_t;

static void wire_rd_sane(const wire_rd_t *w) {
  FUZZ_CHECK(w->rd.left <= w->len);
  FUZZ_CHECK(w->rd.p == w->body + (w->len - w->rd.left));
}

static uint32_t wire_u32(wire_rd_t *w, mmp__boot_wr_t *out) {
  int was_bad = w->rd.bad;
  uint32_t v = mmp__boot_rd_u32(&w->rd);

  wire_rd_sane(w);
  if (w->rd.bad)
    FUZZ_CHECK(v == 0);
  if (!w->rd.bad && !was_bad)
    mmp__boot_wr_u32(out, v);
  return v;
}

static void wire_str(wire_rd_t *w, size_t max, mmp__boot_wr_t *out) {
  int was_bad = w->rd.bad;
  const char *s = NULL;
  size_t n = mmp__boot_rd_str(&w->rd, &s, max);

  wire_rd_sane(w);
  FUZZ_CHECK(s != NULL && n <= max);
  if (w->rd.bad) {
    FUZZ_CHECK(n == 0);
    return;
  }
  FUZZ_CHECK(n == 0 || ((const uint8_t *)s >= w->body &&
                        (const uint8_t *)s + n <= w->body + w->len));
  if (!was_bad)
    mmp__boot_wr_str(out, s, n);
}

static uint32_t wire_blob(wire_rd_t *w, size_t max, mmp__boot_wr_t *out) {
  int was_bad = w->rd.bad;
  const uint8_t *b = NULL;
  size_t n = mmp__boot_rd_blob(&w->rd, &b, max);

  wire_rd_sane(w);
  FUZZ_CHECK(b != NULL && n <= max);
  if (w->rd.bad) {
    FUZZ_CHECK(n == 0);
    return 0;
  }
  FUZZ_CHECK(n == 0 || (b >= w->body && b + n <= w->body + w->len));
  if (!was_bad)
    mmp__boot_wr_blob(out, b, n);
  return (uint32_t)n;
}

/* A fixed-size field (a nonce, a proof), read with mmp__boot_rd_raw. */
static void wire_raw(wire_rd_t *w, size_t n, mmp__boot_wr_t *out) {
  int was_bad = w->rd.bad;
  const uint8_t *b = mmp__boot_rd_raw(&w->rd, n);

  wire_rd_sane(w);
  if (b == NULL) {
    FUZZ_CHECK(w->rd.bad);
    return;
  }
  FUZZ_CHECK(!w->rd.bad && b >= w->body && b + n <= w->body + w->len);
  if (!was_bad)
    mmp__boot_wr_raw(out, b, n);
}

/* Reads `body` as the fields of `type` (boot.h), writing each field read
 * into `out`. Returns 1 if the body was exactly those fields. */
static int wire_fields(uint8_t type, wire_rd_t *w, mmp__boot_wr_t *out) {
  uint32_t count, i;

  switch (type) {
  case MMP__B_HELLO:
    wire_raw(w, MMP__NONCE_LEN, out); /* a nonce, no key */
    wire_u32(w, out);                 /* rank */
    wire_u32(w, out);                 /* size */
    wire_u32(w, out);                 /* pid */
    wire_str(w, 255, out);
    break;
  case MMP__B_PUT:
    wire_str(w, MMP__BOOT_MAX_NAME, out);
    wire_blob(w, MMP__BOOT_MAX_VALUE, out);
    break;
  case MMP__B_GETALL:
    wire_str(w, MMP__BOOT_MAX_NAME, out);
    break;
  case MMP__B_GET:
    wire_u32(w, out);
    wire_str(w, MMP__BOOT_MAX_NAME, out);
    break;
  case MMP__B_VALUES:
    count = wire_u32(w, out);
    for (i = 0; i < count && !w->rd.bad; i++)
      wire_blob(w, MMP__BOOT_MAX_VALUE, out);
    break;
  case MMP__B_FENCE:
    wire_u32(w, out);
    break;
  case MMP__B_ABORT:
  case MMP__B_SUSPECT:
  case MMP__B_ERROR:
    wire_u32(w, out);
    wire_str(w, 4096, out);
    break;
  case MMP__B_EVENT:
    wire_u32(w, out);
    wire_u32(w, out);
    wire_u32(w, out);
    wire_str(w, 4096, out);
    break;
  case MMP__B_CHALLENGE:
    wire_raw(w, MMP__NONCE_LEN, out);
    wire_u32(w, out); /* flags */
    break;
  case MMP__B_PROOF:
  case MMP__B_WELCOME:
    wire_raw(w, MMP__MAC_LEN, out);
    break;
  default: /* FENCE_DONE, BYE: empty */
    break;
  }
  return !w->rd.bad && w->rd.left == 0;
}

/* Decode, encode, compare; then the writer's header decodes back. */
static void wire_round_trip(const mmp__boot_hdr_t *h, const uint8_t *body) {
  wire_rd_t w;
  mmp__boot_wr_t out;
  mmp__boot_hdr_t back;
  const char *why;
  int rc;

  w.body = body;
  w.len = h->len;
  mmp__boot_rd_init(&w.rd, body, h->len);
  mmp__boot_wr_init(&out);
  if (!wire_fields(h->type, &w, &out)) {
    free(out.buf);
    return;
  }
  rc = mmp__boot_wr_finish(&out, h->type, h->id);
  FUZZ_CHECK(rc == 0);
  FUZZ_CHECK(out.len == MMP__BOOT_HDR_SIZE + h->len);
  FUZZ_CHECK(h->len == 0 ||
             memcmp(out.buf + MMP__BOOT_HDR_SIZE, body, h->len) == 0);
  rc = mmp__boot_hdr_decode(out.buf, h->len, &back, &why);
  FUZZ_CHECK(rc == 0 && back.type == h->type && back.id == h->id &&
             back.len == h->len);
  free(out.buf);
}

/* ---- The reassembler ------------------------------------------------------
 */

typedef struct wire_rx_s {
  uint32_t max_body;
  fuzz_buf_t log; /* every message and the error, serialised */
  int err;
  int closed;
  unsigned messages;
  unsigned stop_after; /* "closed" once this many messages arrived */
  size_t before_err;   /* log's length when the error came */
} wire_rx_t;

static int wire_on_header(void *ctx, mmp__boot_rx_t *rx, const char **why) {
  wire_rx_t *x = ctx;
  return mmp__boot_hdr_decode(rx->hbuf, x->max_body, &rx->hdr, why);
}

static void wire_on_message(void *ctx, const mmp__boot_hdr_t *h,
                            const uint8_t *body) {
  wire_rx_t *x = ctx;

  FUZZ_CHECK(!x->closed && x->err == 0);
  FUZZ_CHECK(h->len <= x->max_body);
  fuzz_buf_u8(&x->log, h->type);
  fuzz_buf_u32(&x->log, h->id);
  fuzz_buf_u32(&x->log, h->len);
  fuzz_buf_put(&x->log, body, h->len);
  wire_round_trip(h, body);
  if (++x->messages == x->stop_after)
    x->closed = 1;
}

static void wire_on_error(void *ctx, int err, const char *why) {
  wire_rx_t *x = ctx;

  FUZZ_CHECK(!x->closed && x->err == 0);
  FUZZ_CHECK(err == MMP_EPROTO || err == MMP_ETOOBIG);
  FUZZ_CHECK(why != NULL);
  x->err = err;
  x->closed = 1;
  x->before_err = x->log.len;
  fuzz_buf_u8(&x->log, 0xee);
  fuzz_buf_put(&x->log, why, strlen(why));
}

static int wire_is_closed(void *ctx) {
  return ((wire_rx_t *)ctx)->closed;
}

static const mmp__boot_rx_ops_t wire_ops = {wire_on_header, wire_on_message,
                                            wire_on_error, wire_is_closed};

/* Feeds the stream in pieces: whole (mode 0), one byte at a time (1), or
 * random lengths from `seed` (2). */
static void wire_feed(wire_rx_t *x, const uint8_t *p, size_t n, int mode,
                      uint32_t seed, uint32_t max_body, unsigned stop_after) {
  mmp__boot_rx_t rx;
  uint32_t s = seed | 1;

  memset(x, 0, sizeof(*x));
  memset(&rx, 0, sizeof(rx));
  x->max_body = max_body;
  x->stop_after = stop_after;
  while (n > 0 && !x->closed) {
    size_t take = n;
    if (mode == 1) {
      take = 1;
    } else if (mode == 2) {
      s ^= s << 13;
      s ^= s >> 17;
      s ^= s << 5;
      take = 1 + s % (s & 0x100 ? 24 : 700);
    }
    if (take > n)
      take = n;
    mmp__boot_rx_feed(&rx, p, take, &wire_ops, x);
    p += take;
    n -= take;
  }
  mmp__boot_rx_fini(&rx);
  FUZZ_CHECK(rx.body == NULL);
}

static uint32_t wire_next(uint32_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 17;
  *s ^= *s << 5;
  return *s;
}

/* Seals the stream as a peer that writes it in random pieces would (one
 * or more records per write) and feeds that in random pieces to a sealed
 * reassembler; `flip`: alter one byte first. */
static void wire_feed_sealed(wire_rx_t *x, const uint8_t *p, size_t n,
                             uint32_t seed, uint32_t max_body,
                             unsigned stop_after, int flip) {
  static const uint8_t key[MMP__SESSION_KEY_LEN] = {7, 1, 7};
  mmp__seal_t tx;
  mmp__boot_rx_t rx;
  fuzz_buf_t ct = {0};
  uint32_t s = seed | 1;
  size_t at = 0;

  memset(x, 0, sizeof(*x));
  memset(&rx, 0, sizeof(rx));
  memset(&tx, 0, sizeof(tx));
  memcpy(tx.key, key, sizeof(key));
  x->max_body = max_body;
  x->stop_after = stop_after;
  while (at < n) {
    size_t take = 1 + wire_next(&s) % 40000, len;
    uint8_t *buf;
    if (take > n - at)
      take = n - at;
    buf = malloc(take);
    FUZZ_CHECK(buf != NULL);
    memcpy(buf, p + at, take);
    len = take;
    FUZZ_CHECK(mmp__boot_seal_msg(&tx, &buf, &len) == 0);
    fuzz_buf_put(&ct, buf, len);
    free(buf);
    at += take;
  }
  if (flip && ct.len > 0)
    ct.p[wire_next(&s) % ct.len] ^= (uint8_t)(1u << (wire_next(&s) % 8));
  FUZZ_CHECK(mmp__boot_rx_seal(&rx, key) == 0);
  at = 0;
  while (at < ct.len && !x->closed) {
    size_t take = 1 + wire_next(&s) % 700;
    if (take > ct.len - at)
      take = ct.len - at;
    mmp__boot_rx_feed(&rx, ct.p + at, take, &wire_ops, x);
    at += take;
  }
  mmp__boot_rx_fini(&rx);
  fuzz_buf_free(&ct);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const uint32_t limits[8] = {
      0, 16, 64, 300, 4096, 4 + 2 + 64 + 4 + 4096, 65536, MMP__BOOT_MAX_BODY};
  wire_rx_t whole, bytes, pieces, sealed, altered;
  uint32_t max_body, seed;
  unsigned stop_after;

  if (size < 5)
    return 0;
  max_body = limits[data[0] & 7];
  stop_after = data[0] >> 3; /* 0: never closed by the owner */
  seed = mmp__get_u32(data + 1);
  data += 5;
  size -= 5;
  if (size >= MMP__BOOT_HDR_SIZE)
    wire_check_header(data, max_body);

  wire_feed(&whole, data, size, 0, seed, max_body, stop_after);
  wire_feed(&bytes, data, size, 1, seed, max_body, stop_after);
  wire_feed(&pieces, data, size, 2, seed, max_body, stop_after);
  FUZZ_CHECK(fuzz_buf_equal(&whole.log, &bytes.log));
  FUZZ_CHECK(fuzz_buf_equal(&whole.log, &pieces.log));
  wire_feed_sealed(&sealed, data, size, seed, max_body, stop_after, 0);
  FUZZ_CHECK(fuzz_buf_equal(&whole.log, &sealed.log));
  wire_feed_sealed(&altered, data, size, seed, max_body, stop_after, 1);
  if (altered.err == MMP_EPROTO && altered.before_err < altered.log.len &&
      altered.log.len - altered.before_err > 14 &&
      memcmp(altered.log.p + altered.before_err + 1, "sealed record", 13) ==
          0) {
    /* What came before the altered record, then its error. */
    FUZZ_CHECK(altered.before_err <= whole.log.len);
    FUZZ_CHECK(altered.before_err == 0 ||
               memcmp(altered.log.p, whole.log.p, altered.before_err) == 0);
  } else {
    /* The stream ended (an error of its own, or its owner closed it)
     * before the altered record, or that record now claims more bytes
     * than came: a prefix. */
    FUZZ_CHECK(altered.log.len <= whole.log.len);
    FUZZ_CHECK(altered.log.len == 0 ||
               memcmp(altered.log.p, whole.log.p, altered.log.len) == 0);
  }
  fuzz_buf_free(&whole.log);
  fuzz_buf_free(&bytes.log);
  fuzz_buf_free(&pieces.log);
  fuzz_buf_free(&sealed.log);
  fuzz_buf_free(&altered.log);
  return 0;
}

/* ---- Seeds -----------------------------------------------------------------
 */

/* Appends one message built by the writer. */
static void wire_msg(fuzz_buf_t *b, mmp__boot_wr_t *w, uint8_t type,
                     uint32_t id) {
  if (mmp__boot_wr_finish(w, type, id) != 0)
    abort();
  fuzz_buf_put(b, w->buf, w->len);
  free(w->buf);
  mmp__boot_wr_init(w);
}

static void wire_emit(fuzz_emit_fn emit, const char *name, uint8_t limit,
                      const fuzz_buf_t *stream) {
  fuzz_buf_t b = {0};

  fuzz_buf_u8(&b, limit);
  fuzz_buf_u32(&b, 0x9e3779b9u);
  fuzz_buf_put(&b, stream->p, stream->len);
  emit(name, b.p, b.len);
  fuzz_buf_free(&b);
}

void fuzz_seeds(fuzz_emit_fn emit) {
  static const uint8_t nonce[MMP__NONCE_LEN] =
      "0123456789abcdef0123456789abcdef";
  fuzz_buf_t s = {0};
  mmp__boot_wr_t w;
  uint8_t hdr[MMP__BOOT_HDR_SIZE];
  mmp__boot_hdr_t h;

  /* A client's session: HELLO, PROOF, PUT, GETALL, GET, FENCE, SUSPECT,
   * BYE. */
  mmp__boot_wr_init(&w);
  mmp__boot_wr_raw(&w, nonce, sizeof(nonce));
  mmp__boot_wr_u32(&w, 1);
  mmp__boot_wr_u32(&w, 4);
  mmp__boot_wr_u32(&w, 4242);
  mmp__boot_wr_str(&w, "node1", 5);
  wire_msg(&s, &w, MMP__B_HELLO, 0);
  mmp__boot_wr_raw(&w, nonce, MMP__MAC_LEN);
  wire_msg(&s, &w, MMP__B_PROOF, 0);
  mmp__boot_wr_str(&w, "addr", 4);
  mmp__boot_wr_blob(&w, "127.0.0.1:4000", 14);
  wire_msg(&s, &w, MMP__B_PUT, 0);
  mmp__boot_wr_str(&w, "addr", 4);
  wire_msg(&s, &w, MMP__B_GETALL, 1);
  mmp__boot_wr_u32(&w, 3);
  mmp__boot_wr_str(&w, "addr", 4);
  wire_msg(&s, &w, MMP__B_GET, 2);
  mmp__boot_wr_u32(&w, 1);
  wire_msg(&s, &w, MMP__B_FENCE, 3);
  mmp__boot_wr_u32(&w, 2);
  mmp__boot_wr_str(&w, "silent", 6);
  wire_msg(&s, &w, MMP__B_SUSPECT, 0);
  wire_msg(&s, &w, MMP__B_BYE, 0);
  wire_emit(emit, "client-session", 7, &s);
  wire_emit(emit, "client-session-small-limit", 3, &s);
  wire_emit(emit, "client-session-closed-after-2", 7 | 2 << 3, &s);
  s.len = 0;

  /* A server's replies: CHALLENGE, WELCOME, VALUES, FENCE_DONE, EVENT,
   * ERROR. */
  mmp__boot_wr_raw(&w, nonce, sizeof(nonce));
  mmp__boot_wr_u32(&w, MMP__BOOT_SEAL);
  wire_msg(&s, &w, MMP__B_CHALLENGE, 0);
  mmp__boot_wr_raw(&w, nonce, MMP__MAC_LEN);
  wire_msg(&s, &w, MMP__B_WELCOME, 0);
  mmp__boot_wr_u32(&w, 3);
  mmp__boot_wr_blob(&w, "a", 1);
  mmp__boot_wr_blob(&w, "", 0);
  mmp__boot_wr_blob(&w, "ccc", 3);
  wire_msg(&s, &w, MMP__B_VALUES, 1);
  wire_msg(&s, &w, MMP__B_FENCE_DONE, 3);
  mmp__boot_wr_u32(&w, MMP__BOOT_EV_RANK_FAILED);
  mmp__boot_wr_u32(&w, 2);
  mmp__boot_wr_u32(&w, (uint32_t)MMP_EPEERLOST);
  mmp__boot_wr_str(&w, "lost", 4);
  wire_msg(&s, &w, MMP__B_EVENT, 0);
  mmp__boot_wr_u32(&w, (uint32_t)MMP_EAUTH);
  mmp__boot_wr_str(&w, "wrong job key", 13);
  wire_msg(&s, &w, MMP__B_ERROR, 0);
  wire_emit(emit, "server-replies", 7, &s);
  s.len = 0;

  /* Damaged headers. */
  h.type = MMP__B_PUT;
  h.id = 0;
  h.len = 1u << 20;
  mmp__boot_hdr_encode(&h, hdr);
  fuzz_buf_put(&s, hdr, sizeof(hdr));
  wire_emit(emit, "body-at-limit-truncated", 7, &s);
  wire_emit(emit, "body-over-limit", 4, &s);
  s.len = 0;
  hdr[6] = 1; /* reserved */
  fuzz_buf_put(&s, hdr, sizeof(hdr));
  wire_emit(emit, "reserved-set", 7, &s);
  s.len = 0;
  mmp__boot_hdr_encode(&h, hdr);
  hdr[4] = 1; /* an older peer: version 1 sent the key in clear */
  fuzz_buf_put(&s, hdr, sizeof(hdr));
  wire_emit(emit, "version-1", 7, &s);
  s.len = 0;
  mmp__boot_hdr_encode(&h, hdr);
  hdr[5] = MMP__B_TYPE_MAX + 1;
  fuzz_buf_put(&s, hdr, sizeof(hdr));
  wire_emit(emit, "type-past-max", 7, &s);
  s.len = 0;
  /* VALUES claiming more blobs than it holds, a string past its body. */
  mmp__boot_wr_u32(&w, 0xffffffffu);
  mmp__boot_wr_blob(&w, "x", 1);
  wire_msg(&s, &w, MMP__B_VALUES, 1);
  mmp__boot_wr_u32(&w, 1);
  mmp__boot_wr_u32(&w, 0xffff);
  wire_msg(&s, &w, MMP__B_ABORT, 0);
  wire_emit(emit, "lying-counts", 7, &s);
  fuzz_buf_free(&s);
}
