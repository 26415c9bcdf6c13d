/*
 * part_peer_transport.h -- (partitions-internal) the peer port of a node:
 * authenticated TCP connections between the nodes of a cluster carrying
 * length-prefixed frames both ways, on which the engine forwards a
 * partition's jobs to the node that leads it and gets their answers back
 * (docs/design.md "Cluster", "How a request reaches the leaders"). What a
 * frame means is the caller's; this layer only moves bytes.
 *
 * Each node listens on its cluster.peer address and dials each other node
 * once, when it first sends to it: a node's own frames (requests) go out
 * on the connection it dialed, and the other side answers on that same
 * connection (part__peer_reply), so a connection ("link") is the scope of
 * a request: when it dies, every request sent on it is lost, and the
 * caller learns it from on_link_down. Connections open with the Raft
 * port's handshake (part_handshake.h) under the peer port's own magic and
 * labels.
 *
 * Wire: each frame is a 4-byte big-endian length, then that many bytes. A
 * length over max_frame closes the connection (counted). A zero length is
 * a keepalive, sent on a link with nothing else to send, never delivered:
 * a link that hears nothing for idle_ms is closed, so a peer that stopped
 * (SIGSTOP, a frozen VM, a cut cable) is noticed even though its kernel
 * still holds the TCP connection.
 *
 * Stack: over part_handshake.h, libuv and pthreads.
 *
 * Threading: the node runs on one uv loop, the caller's or a thread of its
 * own. on_frame and on_link_down run on that loop's thread.
 * part__peer_send, part__peer_reply and part__peer_node_stats may be
 * called from any thread (a send from the loop's thread goes out on its
 * next turn). part__peer_node_new and part__peer_node_close: see each.
 */
#ifndef SLUICE_PART_PEER_TRANSPORT_H
#define SLUICE_PART_PEER_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "part_handshake.h"
#include "sl.h"

struct uv_loop_s;
struct part__peer_node;

/* The first bytes of a hello on the peer port: a Raft hello ("SLRT") is
 * refused here as bad_magic, and a peer hello on the Raft port. */
#define PART__PEER_MAGIC UINT32_C(0x534c5052) /* "SLPR", big-endian first */
/* The version of the handshake and of part_fwd.c's frames: 2 added the
 * catalog change's pause flags, forwarded moves, removes and barriers, and
 * filter pairs. Nodes of two versions refuse each other (bad_version)
 * rather than misread each other's frames. */
#define PART__PEER_VERSION 2
/* The name every peer hello asks for: the port serves one thing. */
#define PART__PEER_NAME "peer"
/* A frame's bytes at most, when the options say 0: far over a batch of
 * ten 256 KiB messages, and a bound on what a buggy peer can make a node
 * allocate. */
#define PART__PEER_FRAME_MAX ((size_t)16 << 20)
/* Bytes queued to one peer and not yet written at most, when the options
 * say 0: past it a send or reply fails with SL_EBUSY rather than let a
 * slow peer take all the memory. */
#define PART__PEER_QUEUE_MAX ((size_t)256 << 20)
#define PART__PEER_KEEPALIVE_MS 1000u
#define PART__PEER_IDLE_MS 5000u
/* The pause before the second and later attempts to redial a peer, first
 * and at most; each failure doubles it, randomised by a quarter. */
#define PART__PEER_BACKOFF_MIN_MS 100u
#define PART__PEER_BACKOFF_MAX_MS 2000u

/* One member of the cluster: its id and its peer address. */
struct part__peer_member {
    uint16_t id;
    const char *host;
    uint16_t port;
};

struct part__peer_node_options {
    /* The loop to run on; NULL: the node starts a thread with a loop of
     * its own. */
    struct uv_loop_s *loop;
    uint16_t id;      /* this node, one of members */
    const char *host; /* the address to listen on (this node's cluster.peer) */
    uint16_t port;    /* 0: an ephemeral port (tests), see part__peer_node_port */
    const struct part__peer_member *members; /* every node, this one included */
    size_t member_count;
    const unsigned char *secret; /* the cluster secret; copied */
    size_t secret_len;           /* 1..4096 */
    uint8_t cluster_id[PART__HS_CLUSTER_ID_LEN];
    uint32_t handshake_ms; /* 0: PART__HS_HANDSHAKE_MS */
    size_t max_frame;      /* 0: PART__PEER_FRAME_MAX */
    size_t max_queued;     /* 0: PART__PEER_QUEUE_MAX */
    uint32_t keepalive_ms; /* 0: PART__PEER_KEEPALIVE_MS */
    uint32_t idle_ms;      /* 0: PART__PEER_IDLE_MS; more than keepalive_ms */
    /* Dial every member at once and keep each link up (redialed when it
     * dies), so that its keepalive tells whether the node is there
     * (part__peer_node_up_since); false: a link is dialed on first use. */
    bool keep_links_up;
    /* A frame arrived from node `from` on link (an id never reused, for
     * part__peer_reply). bytes are valid during the call only. */
    void (*on_frame)(void *arg, uint16_t from, uint64_t link, const uint8_t *bytes, size_t len);
    /* Frames to or from node_id may have been lost: outgoing, the link
     * this node dialed died (or a dial failed with frames queued; link is
     * then 0), so every request sent to node_id and not yet answered will
     * never be; !outgoing, a link node_id dialed died, so what it asked on
     * that link cannot be answered. Also called for every live link when
     * the node closes. */
    void (*on_link_down)(void *arg, uint16_t node_id, uint64_t link, bool outgoing);
    void *arg;
};

struct part__peer_stats {
    uint64_t frames_in, bytes_in;             /* frames delivered, their payload bytes */
    uint64_t frames_out, bytes_out;           /* frames written, their payload bytes */
    uint64_t frames_dropped;                  /* queued, then lost with their link */
    uint64_t links_up;                        /* handshakes that made a link, both ways */
    uint64_t links_down;                      /* links that died, close included */
    uint64_t dial_failures;                   /* dials that made no link */
    uint64_t oversize;                        /* links closed for a frame over max_frame */
    uint64_t idle;                            /* links closed for hearing nothing in idle_ms */
    uint64_t rejected[PART__HS_REJECT_COUNT]; /* handshakes refused, by reason */
};

/* Makes a node and starts listening on o->host:o->port; it dials nobody
 * until it has something to send. With o->loop, call it on that loop's
 * thread (or before the loop runs). Copies everything it keeps from o.
 * The caller closes it with part__peer_node_close. Returns SL_OK and sets
 * *out, SL_EINVAL (o->id not among the members, a duplicate id, no
 * secret, no callback, an address that does not resolve, idle_ms not over
 * keepalive_ms) or SL_EIO (the port cannot be bound, or no thread). */
int part__peer_node_new(const struct part__peer_node_options *o, struct part__peer_node **out);

/* The port the node listens on (the ephemeral one when o->port was 0). */
uint16_t part__peer_node_port(const struct part__peer_node *n);

/* Queues a copy of len bytes (0 < len <= max_frame) for node `to`, on the
 * link this node dialed to it, dialing it first if there is none. Any
 * thread. Returns SL_OK once queued (if the link then dies or the dial
 * fails, on_link_down says so), SL_EUNAVAIL (to is known down: its link
 * died or its last dial failed, and no new one has succeeded yet -- the
 * node redials it in the background with back-off), SL_EBUSY (over
 * max_queued bytes wait for to), SL_ETOOBIG (len over max_frame),
 * SL_EINVAL (to is not another member, len 0), SL_ENOMEM or SL_ECLOSED
 * (the node is closing). */
int part__peer_send(struct part__peer_node *n, uint16_t to, const void *bytes, size_t len);

/* Queues a copy of len bytes on link (from on_frame), whichever side
 * dialed it: the answer to a frame goes back on the connection the frame
 * came on. Any thread. Returns SL_OK once queued, SL_EUNAVAIL (the link is
 * gone), SL_EBUSY, SL_ETOOBIG, SL_EINVAL (len 0), SL_ENOMEM or
 * SL_ECLOSED, as part__peer_send. */
int part__peer_reply(struct part__peer_node *n, uint64_t link, const void *bytes, size_t len);

/* Copies the node's counters. Any thread, until the node is closed. */
void part__peer_node_stats(const struct part__peer_node *n, struct part__peer_stats *out);

/* Since when (sl_mono_ns() / 1e6) the link this node dialed to node id
 * has been up; 0 while it is down, for an unknown id and for this node.
 * The keepalive takes a silent peer's link down. Any thread. */
uint64_t part__peer_node_up_since(const struct part__peer_node *n, uint16_t id);

/* Stops listening, refuses the handshakes under way, closes every link
 * (on_link_down for each; queued frames are dropped), frees the node, then
 * calls cb(arg) (cb may be NULL). With the caller's loop: call it on that
 * loop's thread, it returns at once and cb runs later from the loop. With
 * a thread of the node's own: call it from another thread (not from a
 * callback), it returns once the thread has ended, after calling cb. No
 * send or reply may start once close is called. */
void part__peer_node_close(struct part__peer_node *n, void (*cb)(void *arg), void *arg);

#endif
