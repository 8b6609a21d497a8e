/* Status snapshot pieces both status tests build (test_daemon_status.c through the server,
 * test_status_render.c through the renderers alone): one copy, so the two keep describing
 * the same ring and read /health the same way. Include after cmocka.h. */
#ifndef UF_TEST_STATUS_FIXTURE_H
#define UF_TEST_STATUS_FIXTURE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "daemon/status_render.h"

/* The ring "alpha_ring" (1024 records, at sequence 777, generation 5) with two consumers:
 * slot 0 "tail", pid 100, 77 behind, last seen at `seen_ns`; slot 3 `tag1`, pid 101, caught
 * up but 12 lost in one lap, sleeping, never seen. */
static inline void uf_test_status_ring(struct uf_status_ring *r, uint64_t seen_ns, const char *tag1)
{
	r->present = 1;
	snprintf(r->name, sizeof(r->name), "alpha_ring");
	r->capacity = 1024;
	r->sequence = 777;
	r->generation = 5;
	r->nconsumers = 2;
	r->consumers[0] = (struct uf_status_consumer){.slot = 0,
	                                              .pid = 100,
	                                              .position = 700,
	                                              .lag = 77,
	                                              .last_seen_ns = seen_ns,
	                                              .tag = "tail"};
	r->consumers[1] = (struct uf_status_consumer){
	    .slot = 3, .pid = 101, .position = 777, .lag = 0, .lost = 12, .laps = 1, .sleeping = 1};
	snprintf(r->consumers[1].tag, sizeof(r->consumers[1].tag), "%s", tag1);
}

/* /health of `s` answers `want_code` with exactly `want`. */
static inline void uf_test_expect_health(const struct uf_status_snapshot *s, unsigned want_code,
                                         const char *want)
{
	unsigned code = 0;
	char *text = uf_status_render_health(s, &code);
	assert_non_null(text);
	assert_int_equal(code, want_code);
	assert_string_equal(text, want);
	free(text);
}

#endif /* UF_TEST_STATUS_FIXTURE_H */
