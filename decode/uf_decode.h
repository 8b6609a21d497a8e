/* decode/: the only header other modules include.
 *
 *   uf_itch50.h   ITCH 5.0 typed views, uf_itch_decode / uf_itch_decode_inline, type tables
 *   uf_mold.h     MoldUDP64 packet parse + safe block iterator, heartbeat / end of session,
 *                 re-request build/parse, packet builder
 *   uf_counters.h decode counters with every error kind named
 *   uf_batch.h    batch decode of received packets with a prefetch distance
 *   uf_reader.h   offline inputs (daily files, pcap) through the same MoldUDP64 parser
 *   uf_soup.h     SoupBinTCP 3.00 packets and stream parser, GLIMPSE 5.0 End of Snapshot
 *   uf_iextp.h    IEX-TP 1.25 segments: header, block iterator, framings, builder
 *   uf_iex.h      IEX DEEP 1.0 / TOPS 1.6 typed views, uf_iex_decode
 *
 * Typical feed-thread use:
 *   struct uf_frame pkt; struct uf_frame_iter it; struct uf_frame_msg b;
 *   struct uf_itch_msg m;
 *   if (uf_mold_open_counted(&pkt, buf, len, &counters) == UF_MOLD_DATA) {
 *           uf_mold_iter_init(&it, &pkt);
 *           while (uf_mold_next(&it, &b))
 *                   if (uf_decode_msg_counted(b.msg, b.len, &m, &counters) == 0)
 *                           apply(b.seq, &m);
 *   }
 */
#ifndef UF_DECODE_H
#define UF_DECODE_H

#include "decode/uf_itch50.h"
#include "decode/uf_counters.h"
#include "decode/uf_mold.h"
#include "decode/uf_batch.h"
#include "decode/uf_reader.h"
#include "decode/uf_soup.h"
#include "decode/uf_iextp.h"
#include "decode/uf_iex.h"

#endif /* UF_DECODE_H */
