/*
 * part_raft_transport.h -- (partitions-internal) the Raft port of a node:
 * one listening TCP socket that serves every Raft group of the node, an
 * authenticated handshake on every connection, then the stream handed to
 * the group's libraft instance as a struct raft_uv_transport
 * (docs/design.md "Cluster").
 *
 * Stack: over part_handshake.h (the handshake and the listening socket,
 * shared with the peer port) and libraft; part_repl.c runs every group
 * of a node over it.
 *
 * Threading: a node and all of its transports belong to one uv loop; every
 * function here runs on that loop's thread, except part__raft_node_stats
 * (any thread).
 */
#ifndef SLUICE_PART_RAFT_TRANSPORT_H
#define SLUICE_PART_RAFT_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "part_handshake.h"
#include "sl.h"

struct uv_loop_s;
struct raft_uv_transport;
struct part__raft_node;

#define PART__RAFT_CLUSTER_ID_LEN PART__HS_CLUSTER_ID_LEN
#define PART__RAFT_GROUP_MAX PART__HS_NAME_MAX /* bytes of a group name ("part-0003") */
#define PART__RAFT_HANDSHAKE_MS PART__HS_HANDSHAKE_MS
#define PART__RAFT_MAX_INCOMING PART__HS_MAX_INCOMING
/* The first bytes of a hello on the Raft port: a stray client (HTTP, a
 * port scanner), the peer port's hello and an older or newer sluice are
 * told apart by them. */
#define PART__RAFT_MAGIC UINT32_C(0x534c5254) /* "SLRT", big-endian first */
#define PART__RAFT_VERSION 1
#define PART__RAFT_HELLO_LEN PART__HS_HELLO_LEN

/* One member of the cluster: its id and its Raft address. host is an IP
 * literal or a name, resolved once when the node is made. */
struct part__raft_peer {
    uint16_t id;
    const char *host;
    uint16_t port;
};

struct part__raft_node_options {
    struct uv_loop_s *loop;
    uint16_t id;      /* this node, one of peers */
    const char *host; /* the address to listen on (this node's cluster.raft) */
    uint16_t port;    /* 0: an ephemeral port (tests), see part__raft_node_port */
    const struct part__raft_peer *peers; /* every node, this one included */
    size_t peer_count;
    const unsigned char *secret; /* the cluster secret; copied */
    size_t secret_len;           /* 1..4096 */
    uint8_t cluster_id[PART__RAFT_CLUSTER_ID_LEN];
    uint32_t handshake_ms; /* 0: PART__RAFT_HANDSHAKE_MS */
};

struct part__raft_stats {
    uint64_t accepted;                        /* streams handed to a group's accept callback */
    uint64_t connected;                       /* streams handed to a group's connect callback */
    uint64_t rejected[PART__HS_REJECT_COUNT]; /* by enum part__hs_reject */
};

/* Makes a node on o->loop and starts listening on o->host:o->port.
 * Copies everything it keeps from o. The caller closes it with
 * part__raft_node_close. Returns SL_OK and sets *out, SL_EINVAL (o->id not
 * among the peers, a duplicate peer id, no secret, an address that does not
 * resolve) or SL_EIO (the port cannot be bound or listened on). */
int part__raft_node_new(const struct part__raft_node_options *o, struct part__raft_node **out);

/* The port the node listens on (the ephemeral one when o->port was 0). */
uint16_t part__raft_node_port(const struct part__raft_node *n);

/* Stops listening, refuses the handshakes under way, and frees the node
 * once every handle it owns has closed, then calls cb(arg) (cb may be
 * NULL). Every transport of the node must have been finished
 * (part__raft_transport_fini) first. */
void part__raft_node_close(struct part__raft_node *n, void (*cb)(void *arg), void *arg);

/* Copies the node's counters. Any thread. */
void part__raft_node_stats(const struct part__raft_node *n, struct part__raft_stats *out);

/* Fills *t as the transport of group name on node n, for raft_uv_init; it
 * keeps t->data for libraft, as raft_uv_tcp_init does. Only connections
 * that name this group reach it, and only once libraft has called listen.
 * The caller releases it with part__raft_transport_fini. Returns SL_OK,
 * SL_EINVAL (an empty name or one over PART__RAFT_GROUP_MAX bytes) or
 * SL_EEXIST (the node already has a transport for that name). */
int part__raft_transport_init(struct part__raft_node *n, const char *name,
                              struct raft_uv_transport *t);

/* Releases what part__raft_transport_init took: after libraft's close of
 * the transport has called back, or when libraft never initialised it. */
void part__raft_transport_fini(struct raft_uv_transport *t);

#endif
