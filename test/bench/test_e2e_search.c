/* uf-bench e2e's rate search (tools/uf-bench/e2e_search.c) on its own, against a modelled
 * system: a step offered more than `loss_above` msg/s loses, and uf-replay reaches at most
 * `sender_max` msg/s. Each case forces the way the search ends (convergence, the cap, the
 * sender, the step budget, nothing loss-free) and checks the rates it offered on the way. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "e2e_search.h"

struct model {
	double loss_above; /* offered rates above this lose */
	double sender_max; /* uf-replay's own limit */
};

/* Runs a whole search against the model, as e2e_run.c does with real steps. */
static void search(struct search *sr, const struct model *m, double first, double cap, int steps)
{
	e2e_search_start(sr, first, cap, steps);
	while (!sr->done) {
		struct step *s = &sr->st[sr->n];
		assert_true(sr->n < steps && sr->n < MAX_SEARCH);
		memset(s, 0, sizeof(*s));
		s->offered = sr->rate;
		s->loss = sr->rate > m->loss_above;
		s->achieved = sr->rate < m->sender_max ? sr->rate : m->sender_max;
		e2e_search_record(sr);
	}
}

static void test_search_doubles_then_bisects_to_within_5_percent(void **state)
{
	const struct model m = {.loss_above = 700000, .sender_max = 1e9};
	struct search sr;
	(void)state;

	search(&sr, &m, 200000, 3200000, 12);
	/* 200k, 400k ok; 800k loses; then halves the interval between 400k and 800k */
	assert_true(sr.n >= 4);
	assert_true(sr.st[0].offered == 200000 && !sr.st[0].loss);
	assert_true(sr.st[1].offered == 400000 && !sr.st[1].loss);
	assert_true(sr.st[2].offered == 800000 && sr.st[2].loss);
	assert_true(sr.st[3].offered == 600000 && !sr.st[3].loss);
	assert_true(sr.max_rate <= m.loss_above);
	assert_true(sr.first_loss_rate > m.loss_above);
	assert_true(sr.first_loss_rate - sr.max_rate < 0.05 * sr.first_loss_rate);
	assert_true(sr.max_idx >= 0 && sr.st[sr.max_idx].achieved == sr.max_rate);
	assert_int_equal(sr.sender_limited, 0);
	assert_true(sr.n < 12); /* it converged before the budget */
}

static void test_search_stops_at_the_cap_without_loss(void **state)
{
	const struct model m = {.loss_above = 1e12, .sender_max = 1e12};
	struct search sr;
	(void)state;

	search(&sr, &m, 200000, 1000000, 12);
	/* 200k, 400k, 800k, then the cap itself, which is where it stops */
	assert_int_equal(sr.n, 4);
	assert_true(sr.st[3].offered == 1000000);
	assert_true(sr.max_rate == 1000000);
	assert_int_equal(sr.max_idx, 3);
	assert_true(sr.first_loss_rate == 0);
	for (int k = 0; k < sr.n; k++)
		assert_true(sr.st[k].offered <= 1000000);
}

static void test_search_stops_when_the_sender_is_the_limit(void **state)
{
	const struct model m = {.loss_above = 1e12, .sender_max = 500000};
	struct search sr;
	(void)state;

	search(&sr, &m, 200000, 3200000, 12);
	/* 800k offered, 500k reached: below 90 %, uf-replay is the limit */
	assert_int_equal(sr.n, 3);
	assert_int_equal(sr.sender_limited, 1);
	assert_true(sr.max_rate == 500000);
	assert_int_equal(sr.max_idx, 2);
}

static void test_search_keeps_to_its_step_budget(void **state)
{
	const struct model m = {.loss_above = 1e12, .sender_max = 1e12};
	struct search sr;
	(void)state;

	search(&sr, &m, 2000, 1e9, 3);
	assert_int_equal(sr.n, 3);
	assert_true(sr.st[2].offered == 8000);
	search(&sr, &m, 2000, 1e9, 50); /* never more than MAX_SEARCH */
	assert_int_equal(sr.n, MAX_SEARCH);
}

static void test_search_with_every_step_lossy_reports_none(void **state)
{
	const struct model m = {.loss_above = 0, .sender_max = 1e12};
	struct search sr;
	(void)state;

	search(&sr, &m, 200000, 3200000, 12);
	/* quarters the rate after each loss until it falls below 1000 msg/s */
	assert_true(sr.st[1].offered == 50000);
	assert_true(sr.max_rate == 0);
	assert_int_equal(sr.max_idx, -1);
	assert_true(sr.first_loss_rate > 0 && sr.first_loss_rate < 1000 * 4);
	assert_true(sr.rate < 1000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_search_doubles_then_bisects_to_within_5_percent),
	    cmocka_unit_test(test_search_stops_at_the_cap_without_loss),
	    cmocka_unit_test(test_search_stops_when_the_sender_is_the_limit),
	    cmocka_unit_test(test_search_keeps_to_its_step_budget),
	    cmocka_unit_test(test_search_with_every_step_lossy_reports_none),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
