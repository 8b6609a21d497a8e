/* The uf-bench subcommands: one line each. UF_BENCH_CMD(name, summary) declares
 * `int uf_bench_<name>(int argc, char **argv)` (defined in bench_<name>.c) and adds it to the
 * dispatch table in main.c. */
UF_BENCH_CMD(ring, "shm ring vs ZeroMQ PUB/SUB vs Unix datagram: latency and throughput")
UF_BENCH_CMD(e2e, "uf-replay -> uringfeed -> consumers per back end: latency, max rate, CPU/msg")
UF_BENCH_CMD(decode, "ITCH/MoldUDP64 decode, prefetch off/on, vs a read-every-byte baseline")
UF_BENCH_CMD(book, "decode + order books vs decode alone, prefetch off/on")
UF_BENCH_CMD(fanout, "local ring vs the same ring through uf-bridge and NATS JetStream")
UF_BENCH_CMD(idle, "what a busy-waiting CPU finds left of its caches after a wait (issue 14)")
