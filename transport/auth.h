/* SPDX-License-Identifier: MIT */
/*
 * Proving membership of a job without sending its key, and sealing a byte
 * stream, for every TCP protocol of libminimp: the ranks' connections
 * (tcp.c), the rendezvous (boot_*.c) and minimprun's control connections
 * (launcher/). All the cryptography is libsodium's; this file only names
 * what is derived from what, so that the three protocols cannot disagree.
 * docs/security.md walks through it.
 *
 * A handshake. The side that dials and the side that listens each send a
 * fresh random nonce inside their first message. Both then hash the
 * transcript (a label naming the protocol and its version, the dialer's
 * first message, the listener's first message) and prove that they hold
 * the job key by a MAC over that hash, their role and a verdict, keyed by
 * a key derived from the job key for that protocol alone. A captured proof
 * is worthless on another connection (the peer's nonce differs), and a
 * proof reflected back at its sender names the wrong role.
 *
 * Sealing. After the handshake a TCP connection may be encrypted: the
 * stream of frames is cut into records, each of them sealed with
 * ChaCha20-Poly1305 (IETF) under a key of its own per connection and per
 * direction, derived from the job key and the transcript. A record is
 *   u32 len (plaintext bytes, 1..MMP__REC_MAX) | ciphertext | 16-byte tag
 * with the length as associated data and the record's number in its
 * direction as the nonce, so a record altered, dropped, replayed or moved
 * fails to open.
 */
#ifndef MMP_TRANSPORT_AUTH_H
#define MMP_TRANSPORT_AUTH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define MMP__JOB_KEY_LEN 16
#define MMP__NONCE_LEN 32
#define MMP__MAC_LEN 32
#define MMP__SESSION_KEY_LEN 32

/* The protocols; each has its own key and transcript label. */
enum {
  MMP__AUTH_TCP = 0,  /* rank to rank */
  MMP__AUTH_BOOT = 1, /* rank to the rendezvous */
  MMP__AUTH_CTRL = 2, /* minimprun's daemon to minimprun */
  MMP__AUTH_MCAST = 3 /* the job's multicast datagrams (udp.c) */
};

/* Who computes a proof. */
enum { MMP__AUTH_DIALER = 'D', MMP__AUTH_LISTENER = 'L' };

/* Verdicts a proof can carry. */
enum {
  MMP__AUTH_PROVE = 0,  /* the dialer's proof */
  MMP__AUTH_ACCEPT = 1, /* the listener's proof: the connection is taken */
  MMP__AUTH_REFUSE = 2  /* the listener's proof: refused, as a duplicate */
};

/* One handshake: the protocol's key and the transcript's hash. */
typedef struct mmp__auth_s {
  uint8_t key[32];
  uint8_t hash[32];
  int kind;
} mmp__auth_t;

/* Initialises libsodium once per process; thread-safe. Returns 0 or
 * MMP_EIO (the library cannot run here). */
int mmp__auth_init(void);

/* Fills `out` with a fresh random nonce. mmp__auth_init() first. */
void mmp__auth_nonce(uint8_t out[MMP__NONCE_LEN]);

/*
 * Starts checking a handshake of protocol `kind` under `job_key`: the
 * dialer's first message (its body, `n1` bytes) and the listener's (`n2`
 * bytes), which both sides hold byte for byte. The caller wipes `a` with
 * mmp__auth_end() once done.
 */
void mmp__auth_begin(mmp__auth_t *a, const uint8_t job_key[MMP__JOB_KEY_LEN],
                     int kind, const void *dialer_msg, size_t n1,
                     const void *listener_msg, size_t n2);

/* The proof of `role` with `verdict` (MMP__AUTH_*). */
void mmp__auth_mac(const mmp__auth_t *a, int role, int verdict,
                   uint8_t out[MMP__MAC_LEN]);

/* 1 if `mac` is the proof of `role` with `verdict`, compared in constant
 * time; else 0. */
int mmp__auth_check(const mmp__auth_t *a, int role, int verdict,
                    const uint8_t mac[MMP__MAC_LEN]);

/* The keys that seal each direction of a connection after this handshake
 * (MMP__AUTH_TCP, _BOOT or _CTRL; the transcript names the protocol, so
 * each gets keys of its own): dialer to listener, listener to dialer. */
void mmp__auth_session_keys(const mmp__auth_t *a,
                            const uint8_t job_key[MMP__JOB_KEY_LEN],
                            uint8_t d2l[MMP__SESSION_KEY_LEN],
                            uint8_t l2d[MMP__SESSION_KEY_LEN]);

/* ---- Datagrams ------------------------------------------------------- */

#define MMP__DGRAM_MAC_LEN 16

/* What every multicast datagram of the job is checked with (udp.c): a
 * MAC key and a public job id, both derived from the job key alone, so
 * that every rank computes the same and a datagram of another job (another
 * key) is told apart before its MAC is computed. */
typedef struct mmp__dgram_keys_s {
  uint8_t mac_key[32];
  uint64_t job_id;
  uint8_t group_bits[4]; /* where the group lies in its range */
} mmp__dgram_keys_t;

void mmp__auth_dgram_keys(const uint8_t job_key[MMP__JOB_KEY_LEN],
                          mmp__dgram_keys_t *out);

/* The truncated MAC (keyed BLAKE2b, 16 bytes) of a header and payload. */
void mmp__auth_dgram_mac(const mmp__dgram_keys_t *k, const void *hdr,
                         size_t nhdr, const void *payload, size_t n,
                         uint8_t out[MMP__DGRAM_MAC_LEN]);

/* 1 if `mac` is that MAC, compared in constant time; else 0. */
int mmp__auth_dgram_check(const mmp__dgram_keys_t *k, const void *hdr,
                          size_t nhdr, const void *payload, size_t n,
                          const uint8_t mac[MMP__DGRAM_MAC_LEN]);

/* Wipes the handshake's secrets. */
void mmp__auth_end(mmp__auth_t *a);

/* Wipes `n` bytes of secret in a way the compiler keeps. */
void mmp__auth_wipe(void *p, size_t n);

/* ---- Records --------------------------------------------------------- */

#define MMP__REC_MAX (32u * 1024) /* plaintext bytes in one record */
#define MMP__REC_HDR 4
#define MMP__REC_TAG 16
#define MMP__REC_OVERHEAD (MMP__REC_HDR + MMP__REC_TAG)

/* One direction of a sealed stream. */
typedef struct mmp__seal_s {
  uint8_t key[MMP__SESSION_KEY_LEN];
  uint64_t next; /* number of the next record */
} mmp__seal_t;

/* Bytes on the wire for `n` plaintext bytes (n > 0). */
uint64_t mmp__seal_size(uint64_t n);

/*
 * Seals the `n` plaintext bytes held by `iov` (their lengths add up to n)
 * into `out`, which has mmp__seal_size(n) bytes, as consecutive records of
 * at most MMP__REC_MAX bytes. `scratch` (MMP__REC_MAX bytes) gathers a
 * record that spans pieces. Never fails.
 */
void mmp__seal(mmp__seal_t *s, const struct iovec *iov, unsigned niov,
               uint64_t n, uint8_t *out, uint8_t *scratch);

/*
 * Opens the record at the start of `in` (`avail` bytes received so far)
 * into `out` (MMP__REC_MAX bytes of room). Returns the bytes the record
 * took and sets *plain; 0 if the record is not complete yet; or
 * MMP_EPROTO with *why set: a length out of range, or a record that fails
 * authentication (altered, replayed, reordered, or not ours). Nothing is
 * written to `out` unless the record is authentic.
 */
long mmp__open(mmp__seal_t *s, const uint8_t *in, size_t avail, uint8_t *out,
               size_t *plain, const char **why);

#endif /* MMP_TRANSPORT_AUTH_H */
