/* publish/: conformance on third-party files in ../shared/data/itch50 (UF_SHARED_DATA):
 * the simulated 12,012-message day must end with the books the reference model builds, the
 * real 1,000-message head must build its directory, and every real capture must apply with
 * the same books and integrity counts as the model (captures start mid-day, so executions of
 * orders added before the capture are expected unknown references, never a crash). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "decode/uf_decode.h"
#include "pub_test_util.h"

static const char *data_dir(void)
{
	const char *d = getenv("UF_SHARED_DATA");
	if (!d) {
		print_error("UF_SHARED_DATA is not set: run through ctest (conformance label)\n");
		fail();
	}
	return d;
}

struct run {
	struct uf_publisher *p;
	struct ref_model r;
	struct rec_checker c;
	uint64_t msgs;
	uint64_t by_type[256];
	struct uf_decode_counters dc;
};

static struct run *run_file(const char *path, uint32_t prefetch_batch)
{
	struct run *x = calloc(1, sizeof(*x));
	assert_non_null(x);
	struct uf_publish_params pp;
	uf_publish_params_default(&pp);
	pp.max_orders = 1000000;
	pp.max_instruments = 65536;
	pp.max_levels = 1u << 18;
	pp.prefetch = prefetch_batch;
	assert_int_equal(uf_publish_create(&pp, &x->p), 0);
	ref_init(&x->r, pp.max_orders, pp.max_instruments);
	rc_init(&x->c, pp.max_instruments, 1);
	struct uf_reader rd;
	int rc = uf_reader_open(&rd, path, &x->dc);
	if (rc) {
		print_error("%s: %s\n", path, rd.err);
		fail();
	}
	struct uf_reader_msg rm;
	struct uf_itch_msg *batch = calloc(64, sizeof(*batch));
	struct uf_record rec[64 * UF_REC_MAX_PER_MSG];
	uint64_t first = 0;
	size_t nb = 0;
	for (;;) {
		int more = uf_reader_next(&rd, &rm) == 1;
		int ok = more && uf_itch_decode(rm.msg, rm.len, &batch[nb]) == 0;
		if (ok) {
			x->msgs++;
			x->by_type[batch[nb].type]++;
			ref_apply(&x->r, &batch[nb]);
			if (nb == 0)
				first = rm.seq;
			nb++;
		}
		/* Flush when full, at the end, or (single mode) after each message. */
		if (nb && (nb == 64 || !more || !prefetch_batch)) {
			size_t done = 0;
			while (done < nb) {
				size_t applied = 0;
				int k;
				if (prefetch_batch) {
					k = uf_publish_apply_batch(x->p, &batch[done], nb - done,
					                           first + done, 0, rec,
					                           UF_ARRAY_SIZE(rec), &applied);
				} else {
					k = uf_publish_apply(x->p, &batch[done], first + done, 0,
					                     rec, UF_ARRAY_SIZE(rec));
					applied = 1;
				}
				assert_true(k >= 0);
				/* Split the records into events by their LAST flags. */
				int s = 0;
				for (int i = 0; i < k; i++) {
					if (rec[i].flags & UF_RECF_LAST) {
						rc_event(&x->c, &rec[s], i - s + 1);
						s = i + 1;
					}
				}
				assert_int_equal(s, k);
				done += applied;
			}
			nb = 0;
		}
		if (!more)
			break;
	}
	free(batch);
	uf_reader_close(&rd);
	return x;
}

static void run_free(struct run *x)
{
	rc_free(&x->c);
	ref_free(&x->r);
	uf_publish_destroy(x->p);
	free(x);
}

static void check_against_model(struct run *x)
{
	pub_compare_books(x->p, &x->r);
	pub_compare_errors(x->p, &x->r);
	rc_compare(&x->c, x->p);
}

static void test_simulated_day_ends_with_reference_model_books(void **state)
{
	(void)state;
	char path[512];
	snprintf(path, sizeof(path), "%s/itch50/ritch-simulated-zero-len.itch", data_dir());
	for (uint32_t pf = 0; pf <= 16; pf += 16) {
		struct run *x = run_file(path, pf);
		/* The published counts of this file. */
		assert_int_equal(x->msgs, 12012);
		assert_int_equal(x->by_type['S'], 6);
		assert_int_equal(x->by_type['R'], 3);
		assert_int_equal(x->by_type['H'], 3);
		assert_int_equal(x->by_type['A'], 4997);
		assert_int_equal(x->by_type['F'], 3);
		assert_int_equal(x->by_type['E'], 198);
		assert_int_equal(x->by_type['X'], 45);
		assert_int_equal(x->by_type['D'], 1745);
		assert_int_equal(x->by_type['U'], 12);
		assert_int_equal(x->by_type['P'], 5000);
		check_against_model(x);
		size_t levels = 0;
		const char *syms[] = {"ALC", "BOB", "CHAR"};
		for (int i = 0; i < 3; i++) {
			int id = uf_publish_lookup(x->p, syms[i]);
			assert_true(id >= 0);
			levels += uf_publish_depth(x->p, (uint32_t)id, UF_SIDE_BID) +
			          uf_publish_depth(x->p, (uint32_t)id, UF_SIDE_ASK);
			assert_int_equal(uf_publish_instrument(x->p, (uint32_t)id)->has_directory,
			                 1);
		}
		struct uf_publish_stats st;
		uf_publish_stats(x->p, &st);
		print_message("simulated day (prefetch %u): %llu live orders, %zu levels, %llu "
		              "records, %llu integrity errors\n",
		              pf, (unsigned long long)st.live_orders, levels,
		              (unsigned long long)st.records, (unsigned long long)st.errors_total);
		assert_true(levels > 0);
		/* The simulator writes some D/E before the A of their order (timestamps in order,
		 * references not): those, and only those, are integrity errors, and the model
		 * counts the same (checked above). */
		assert_int_equal(st.errors_total, st.errors[UF_PUB_ERR_UNKNOWN_REF]);
		/* Adds minus orders that left: the live count is what the model says. */
		assert_int_equal(st.live_orders, x->r.live);
		run_free(x);
	}
}

static void test_real_head_builds_directory_and_status(void **state)
{
	(void)state;
	char path[512];
	snprintf(path, sizeof(path), "%s/itch50/nasdaq-head-1000.itch", data_dir());
	struct run *x = run_file(path, 16);
	assert_int_equal(x->msgs, 1000);
	assert_int_equal(x->by_type['R'], 993);
	check_against_model(x);
	/* Every R named a distinct instrument that resolves back to its id. */
	uint32_t named = 0;
	for (uint32_t id = 0; id < 65536; id++) {
		char sym[9];
		const struct uf_pub_instrument *in = uf_publish_instrument(x->p, id);
		if (!in->has_directory)
			continue;
		named++;
		assert_true(uf_publish_symbol(x->p, id, sym) > 0);
		assert_int_equal(uf_publish_lookup(x->p, sym), (int)id);
		assert_true(in->round_lot > 0);
	}
	assert_int_equal(named, 993);
	assert_int_equal(uf_publish_market(x->p)->system_event, 'O');
	struct uf_publish_stats st;
	uf_publish_stats(x->p, &st);
	assert_int_equal(st.errors_total, 0);
	assert_int_equal(st.live_orders, 0);
	run_free(x);
}

static void test_real_captures_apply_like_the_model(void **state)
{
	(void)state;
	static const char *dirs[] = {
	    "Nasdaq.Equities.TotalView.Itch.v5.0",
	    "Nasdaq.Equities.TotalView.Itch.v5.0.20230822",
	    "Bx.Equities.TotalView.Itch.v5.0.20230822",
	    "Psx.Equities.TotalView.Itch.v5.0.20230822",
	};
	int files = 0;
	uint64_t msgs = 0, adds = 0;
	for (size_t d = 0; d < UF_ARRAY_SIZE(dirs); d++) {
		char dir[512];
		snprintf(dir, sizeof(dir), "%s/itch50/omi-real/%s", data_dir(), dirs[d]);
		DIR *dp = opendir(dir);
		if (!dp) {
			print_error("cannot open %s\n", dir);
			fail();
		}
		struct dirent *e;
		while ((e = readdir(dp)) != NULL) {
			size_t l = strlen(e->d_name);
			if (l < 5 || strcmp(e->d_name + l - 5, ".pcap") != 0)
				continue;
			char path[1024];
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			struct run *x = run_file(path, 4);
			check_against_model(x);
			msgs += x->msgs;
			adds += x->by_type['A'] + x->by_type['F'];
			files++;
			run_free(x);
		}
		closedir(dp);
	}
	print_message("%d captures, %llu messages, %llu adds\n", files, (unsigned long long)msgs,
	              (unsigned long long)adds);
	assert_true(files >= 40);
	assert_true(adds > 0);
}

static void test_books_command_on_simulated_day_prints_model_books(void **state)
{
	(void)state;
	char path[512], cmd[2048], bin[512];
	snprintf(path, sizeof(path), "%s/itch50/ritch-simulated-zero-len.itch", data_dir());
	snprintf(bin, sizeof(bin), "%s/uf-decode", bin_dir());
	if (access(bin, X_OK) != 0) {
		print_error("uf-decode not built at %s\n", bin);
		fail();
	}
	struct ref_model *r = malloc(sizeof(*r));
	struct sym_map *s = calloc(1, sizeof(*s));
	ref_init(r, 4000000, 65536);
	pub_model_from_file(r, s, path, 65536);
	for (size_t depth = 0; depth <= 10; depth += 10) {
		snprintf(cmd, sizeof(cmd), "%s books %s %s 2>/dev/null", bin, path,
		         depth ? "--depth 10" : "");
		int st;
		char *got = run_capture(cmd, &st);
		char *want = model_books_json(r, s, depth);
		/* 1: the file's D/E-before-A messages are integrity errors (books still printed).
		 */
		assert_int_equal(st, 1);
		assert_non_null(strstr(got, "{\"symbol\":\"ALC\""));
		assert_string_equal(got, want);
		free(got);
		free(want);
	}
	ref_free(r);
	free(r);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_simulated_day_ends_with_reference_model_books),
	    cmocka_unit_test(test_real_head_builds_directory_and_status),
	    cmocka_unit_test(test_real_captures_apply_like_the_model),
	    cmocka_unit_test(test_books_command_on_simulated_day_prints_model_books),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
