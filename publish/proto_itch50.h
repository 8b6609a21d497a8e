/* The ITCH 5.0 over MoldUDP64 protocol entry ("itch50-moldudp64"): Nasdaq TotalView-ITCH
 * messages in MoldUDP64 packets, order-by-order books, MoldUDP64 re-requests, GLIMPSE
 * snapshots (ITCH messages over SoupBinTCP). Listed in publish/protocols.c. */
#ifndef UF_PROTO_ITCH50_H
#define UF_PROTO_ITCH50_H

#include "publish/uf_proto.h"

extern const struct uf_proto uf_proto_itch50_moldudp64;

#endif /* UF_PROTO_ITCH50_H */
