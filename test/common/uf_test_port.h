/* Fixed UDP and TCP ports of the tests: outside the kernel's ephemeral range. */
#ifndef UF_TEST_PORT_H
#define UF_TEST_PORT_H

#include <stdio.h>
#include <stdlib.h>

/* Any socket's automatic port (a connect, a send before bind, a bind to port 0) comes from
 * net.ipv4.ip_local_port_range (32768-60999 by default). A test that binds a fixed port in
 * that range loses it, now and then, to whatever took it first: a loaded CI run failed so
 * (EADDRINUSE on a re-request server's port, the feed got nothing). So every fixed test
 * port lies below it; this says whether `port` does. */
static inline int uf_test_port_fixed_ok(int port)
{
	int lo = 32768, hi = 60999;
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
	if (f) {
		if (fscanf(f, "%d %d", &lo, &hi) != 2) {
			lo = 32768;
			hi = 60999;
		}
		fclose(f);
	}
	return port > 0 && port < 65536 && (port < lo || port > hi);
}

/* Stops the test at once, naming the port, when `port` is not a safe fixed port: a test
 * laid out with ports in the ephemeral range fails on every run, not one run in hundreds. */
static inline int uf_test_port_fixed(int port)
{
	if (!uf_test_port_fixed_ok(port)) {
		fprintf(stderr,
		        "test port %d lies in the kernel's ephemeral port range "
		        "(net.ipv4.ip_local_port_range): pick one below it\n",
		        port);
		abort();
	}
	return port;
}

#endif
