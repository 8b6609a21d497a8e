/* The state of the day as a GLIMPSE 5.0 snapshot would carry it, kept up to date message by
 * message as uf-replay sends (tool-private, no sockets).
 *
 * What is kept: the last system event (S), MWCB decline levels (V) and status (W); per stock
 * locate the last stock directory (R), trading action (H), Reg SHO (Y), IPO quoting period
 * (K), LULD auction collar (J), RPI (N), operational halt (h) per market code, and market
 * participant position (L) per MPID; and every resting order with its remaining shares,
 * following the same rules as the books in publish/ (an execution or cancel of more than is
 * left removes the order, a replace keeps side and instrument and goes to the back of the
 * queue, a duplicate reference or a bad side is ignored). So a snapshot taken after messages
 * 1..N-1, loaded into empty books, gives the books of those N-1 messages.
 *
 * Costs: orders live in a hash table (open addressing, grows by doubling at half load);
 * per-locate state is allocated on first use (about 250 bytes a locate). Emitting sorts the
 * live orders by arrival: O(orders log orders), once per login. */
#ifndef RP_SNAP_STATE_H
#define RP_SNAP_STATE_H

#include <stddef.h>
#include <stdint.h>

struct rp_snap_state;

/* Counters for the curious (uf-replay's summary, tests). */
struct rp_snap_state_stats {
	uint64_t applied;     /* messages applied */
	uint64_t undecodable; /* messages of unknown type or wrong length: ignored */
	uint64_t unknown_ref; /* E C X D U on a reference not resting: ignored */
	uint64_t live_orders; /* resting orders now */
};

/* Allocates an empty state. Returns 0 or -ENOMEM. */
int rp_snap_state_create(struct rp_snap_state **out);
void rp_snap_state_destroy(struct rp_snap_state *s);

/* Applies one ITCH 5.0 message (wire bytes). Returns 0, -EBADMSG when it does not decode
 * (counted, ignored), -ENOMEM when the order table cannot grow (the order is lost: counted in
 * nothing else, the caller must treat the state as broken). */
int rp_snap_state_apply(struct rp_snap_state *s, const uint8_t *msg, size_t len);

/* Called once per snapshot message, in snapshot order; a negative return stops the walk. */
typedef int (*rp_snap_emit_fn)(void *ctx, const uint8_t *msg, size_t len);

/* Walks the state as ITCH 5.0 messages: S, V, W, then per locate ascending R H Y K J N h L,
 * then an Add Order (A, or F when the order came with an attribution; A for a replaced
 * order) for every resting order, oldest first, with its remaining shares. Timestamps and
 * tracking numbers are the original messages'. The End of Snapshot is the caller's.
 * Returns the number of messages emitted, the emitter's negative value, or -ENOMEM. */
long long rp_snap_state_emit(const struct rp_snap_state *s, rp_snap_emit_fn emit, void *ctx);

void rp_snap_state_stats(const struct rp_snap_state *s, struct rp_snap_state_stats *out);

#endif /* RP_SNAP_STATE_H */
