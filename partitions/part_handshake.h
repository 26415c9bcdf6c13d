/*
 * part_handshake.h -- (partitions-internal) an authenticated port of a
 * node: one listening TCP socket and the cluster's handshake on every
 * connection it accepts or dials (docs/design.md "Cluster"), after which
 * the bare stream is handed to the port's owner. The Raft port
 * (part_raft_transport.c) and the peer port (part_peer_transport.c) are
 * its two owners; each names its own protocol (magic and MAC labels), so
 * a handshake recorded on one port is refused by the other.
 *
 * Stack: a leaf over sl.h, libuv and OpenSSL.
 *
 * Threading: a port belongs to one uv loop; every function here runs on
 * that loop's thread, except part__hs_port_rejected (any thread).
 */
#ifndef SLUICE_PART_HANDSHAKE_H
#define SLUICE_PART_HANDSHAKE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sl.h"

struct uv_loop_s;
struct uv_tcp_s;
struct part__hs;
struct part__hs_port;

#define PART__HS_CLUSTER_ID_LEN 16
#define PART__HS_NAME_MAX 32 /* bytes of the name a dialer asks for ("part-0003") */
/* How long a handshake may take, the TCP connect included, when the
 * options say 0: long enough for a loaded node, short enough that silent
 * connections cannot pile up. */
#define PART__HS_HANDSHAKE_MS 5000
/* Handshakes a port's listener runs at once; a connection over it is
 * closed at once, so a flood of sockets costs file descriptors only
 * briefly. */
#define PART__HS_MAX_INCOMING 64
/* Bytes of the dialer's hello: magic, version, cluster id, node id (2),
 * name length (1), name (zero-padded), nonce. */
#define PART__HS_HELLO_LEN (4 + 1 + PART__HS_CLUSTER_ID_LEN + 2 + 1 + PART__HS_NAME_MAX + 16)

/* Why a handshake was refused, on either side of it. */
enum part__hs_reject {
    PART__HS_REJECT_BAD_MAGIC,     /* not this port's hello (or a bad name field) */
    PART__HS_REJECT_BAD_VERSION,   /* a sluice of another handshake version */
    PART__HS_REJECT_OTHER_CLUSTER, /* another cluster id */
    PART__HS_REJECT_UNKNOWN_NODE,  /* a node id not in the configuration */
    PART__HS_REJECT_SELF_ID,       /* a dialer that claims to be this node */
    PART__HS_REJECT_UNKNOWN_GROUP, /* a name this port does not serve */
    PART__HS_REJECT_BAD_MAC,       /* the other side does not hold the secret */
    PART__HS_REJECT_DEADLINE,      /* the handshake took too long */
    PART__HS_REJECT_CLOSED,        /* the other side closed or failed mid-handshake */
    PART__HS_REJECT_OVERLOAD,      /* over PART__HS_MAX_INCOMING handshakes */
    PART__HS_REJECT_COUNT
};

/* The reason's label for logs and /metrics ("bad_mac"). */
const char *part__hs_reject_name(enum part__hs_reject r);

/* What tells one port's handshakes from another's: a hello with another
 * magic is refused as bad_magic, and the labels enter both MACs. */
struct part__hs_proto {
    const char *what;      /* "raft": logs say "raft handshake", "raft port" */
    const char *name_what; /* what the name is, for logs: "group" */
    uint32_t magic;        /* the hello's first 4 bytes, big-endian */
    uint8_t version;
    const char *label_listener; /* at most 63 bytes each */
    const char *label_dialer;
};

/* One member of the cluster: its id and its address on this port. host is
 * an IP literal or a name, resolved once when the port is made. */
struct part__hs_peer {
    uint16_t id;
    const char *host;
    uint16_t port;
};

struct part__hs_port_options {
    const struct part__hs_proto *proto; /* kept, not copied: a static */
    struct uv_loop_s *loop;
    uint16_t id;                       /* this node, one of peers */
    const char *host;                  /* the address to listen on */
    uint16_t port;                     /* 0: an ephemeral port (tests), see part__hs_port_port */
    const struct part__hs_peer *peers; /* every node, this one included */
    size_t peer_count;
    const unsigned char *secret; /* the cluster secret; copied */
    size_t secret_len;           /* 1..4096 */
    uint8_t cluster_id[PART__HS_CLUSTER_ID_LEN];
    uint32_t handshake_ms; /* 0: PART__HS_HANDSHAKE_MS */
    /* How the sockets handed over are allocated: the owner frees them
     * with tcp_free after closing them (libraft wants raft_malloc). */
    void *(*tcp_alloc)(size_t size);
    void (*tcp_free)(void *p);
    /* Listener: the hello asked for name; returns the owner that serves
     * it, or NULL to refuse it (unknown_group). */
    void *(*find)(void *arg, const uint8_t *name, size_t len);
    /* Called once for every handshake, either side, on the loop. On
     * success tcp is the authenticated stream, reading stopped, and is the
     * callee's from now on (its data pointer free for the callee's use);
     * on failure tcp is NULL and every handle of the handshake is closed.
     * hs is valid during the call only. */
    void (*done)(void *arg, struct part__hs *hs, struct uv_tcp_s *tcp);
    void *arg;
};

/* Makes a port on o->loop and starts listening on o->host:o->port. Copies
 * everything it keeps from o but o->proto. The caller closes it with
 * part__hs_port_close. Returns SL_OK and sets *out, SL_EINVAL (o->id not
 * among the peers, a duplicate peer id, no secret, an address that does
 * not resolve) or SL_EIO (the port cannot be bound or listened on). */
int part__hs_port_new(const struct part__hs_port_options *o, struct part__hs_port **out);

/* The port the listener is bound to (the ephemeral one when o->port was 0). */
uint16_t part__hs_port_port(const struct part__hs_port *p);

/* Stops listening, refuses every handshake under way (each calls done with
 * NULL), and frees the port once every handle it owns has closed, then
 * calls cb(arg) (cb may be NULL). */
void part__hs_port_close(struct part__hs_port *p, void (*cb)(void *arg), void *arg);

/* Copies the refusals counted so far, by reason. Any thread. */
void part__hs_port_rejected(const struct part__hs_port *p, uint64_t out[PART__HS_REJECT_COUNT]);

/* Dials node `to` at its configured address, asking for name, and runs the
 * handshake; done reports the outcome. owner and data are the caller's,
 * returned by part__hs_owner and part__hs_data. Returns SL_OK and sets
 * *out (may be NULL), or, with nothing to undo and no done call to come:
 * SL_ENOTFOUND (to is not another configured node), SL_EINVAL (an empty
 * name or one over PART__HS_NAME_MAX bytes), SL_ENOMEM or SL_EIO (the
 * socket or the connect could not be started; *errmsg then says why). */
int part__hs_dial(struct part__hs_port *p, uint16_t to, const char *name, void *owner, void *data,
                  struct part__hs **out, const char **errmsg);

/* Refuses every handshake under way whose owner is owner; each calls done
 * with NULL later, from the loop. */
void part__hs_cancel_owner(struct part__hs_port *p, const void *owner);

/* What the owner learns of a handshake in its done callback. */
bool part__hs_dialer(const struct part__hs *hs);           /* this side dialed */
uint16_t part__hs_peer_id(const struct part__hs *hs);      /* the other node */
const char *part__hs_peer_addr(const struct part__hs *hs); /* its configured "host:port" */
void *part__hs_owner(const struct part__hs *hs);           /* NULL: refused before find */
void *part__hs_data(const struct part__hs *hs);            /* a dialer's data */

#endif
