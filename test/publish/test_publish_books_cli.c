/* `uf-decode books`: exact JSON lines (sorted by symbol bytewise, best first, --depth), exit
 * statuses, and on a uf-gen day the very text the reference model predicts. */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "common/uf_endian.h"
#include "common/uf_symbol.h"
#include "decode/uf_decode.h"
#include "pub_test_util.h"

struct daily {
	FILE *f;
};

static void put(struct daily *d, const uint8_t *m, size_t len)
{
	uint8_t l[2];
	uf_put_be16(l, (uint16_t)len);
	assert_int_equal(fwrite(l, 1, 2, d->f), 2);
	assert_int_equal(fwrite(m, 1, len, d->f), len);
}

static void hdr(uint8_t *b, uint8_t type, uint16_t loc)
{
	b[0] = type;
	uf_put_be16(b + 1, loc);
	uf_put_be16(b + 3, 0);
	uf_put_be48(b + 5, 36000000000000ull);
}

static void sym8(uint8_t *p, const char *s)
{
	uf_symbol_pad(p, s);
}

static void w_R(struct daily *d, uint16_t loc, const char *s)
{
	uint8_t b[39] = {0};
	hdr(b, 'R', loc);
	sym8(b + 11, s);
	b[19] = 'Q';
	b[20] = 'N';
	uf_put_be32(b + 21, 100);
	put(d, b, sizeof(b));
}

static void w_A(struct daily *d, uint16_t loc, uint64_t ref, uint8_t side, uint32_t sh, uint32_t px)
{
	uint8_t b[36] = {0};
	hdr(b, 'A', loc);
	uf_put_be64(b + 11, ref);
	b[19] = side;
	uf_put_be32(b + 20, sh);
	sym8(b + 24, "IGNORED"); /* R named these first */
	uf_put_be32(b + 32, px);
	put(d, b, sizeof(b));
}

static void w_E(struct daily *d, uint16_t loc, uint64_t ref, uint32_t sh)
{
	uint8_t b[31] = {0};
	hdr(b, 'E', loc);
	uf_put_be64(b + 11, ref);
	uf_put_be32(b + 19, sh);
	uf_put_be64(b + 23, 1);
	put(d, b, sizeof(b));
}

static void w_D(struct daily *d, uint16_t loc, uint64_t ref)
{
	uint8_t b[19] = {0};
	hdr(b, 'D', loc);
	uf_put_be64(b + 11, ref);
	put(d, b, sizeof(b));
}

static void w_U(struct daily *d, uint16_t loc, uint64_t ref, uint64_t nref, uint32_t sh,
                uint32_t px)
{
	uint8_t b[35] = {0};
	hdr(b, 'U', loc);
	uf_put_be64(b + 11, ref);
	uf_put_be64(b + 19, nref);
	uf_put_be32(b + 27, sh);
	uf_put_be32(b + 31, px);
	put(d, b, sizeof(b));
}

static char *books(const char *file, const char *extra, int *status)
{
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "%s/uf-decode books %s %s 2>/dev/null", bin_dir(), file, extra);
	return run_capture(cmd, status);
}

static void need_binary(void)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/uf-decode", bin_dir());
	if (access(p, X_OK) != 0) {
		print_error("uf-decode not built at %s\n", p);
		fail();
	}
}

static void test_books_prints_sorted_json_lines_best_first(void **state)
{
	(void)state;
	need_binary();
	char path[128];
	snprintf(path, sizeof(path), "/tmp/uf-pub-cli-%d.itch", (int)getpid());
	struct daily d = {fopen(path, "wb")};
	assert_non_null(d.f);
	w_R(&d, 1, "b"); /* lower case sorts after every upper-case symbol (bytewise) */
	w_R(&d, 2, "AB");
	w_R(&d, 3, "A");
	w_R(&d, 4, "B");
	w_R(&d, 5, "EMPTY");
	w_A(&d, 1, 1, 'B', 100, 10000);
	w_A(&d, 1, 2, 'S', 5, 10100);
	w_A(&d, 2, 3, 'B', 1, 5000);
	w_A(&d, 2, 4, 'B', 2, 5000);
	w_A(&d, 2, 5, 'B', 3, 4900);
	w_A(&d, 2, 6, 'S', 7, 5100);
	w_E(&d, 2, 4, 1);
	w_A(&d, 3, 7, 'S', 10, 300);
	w_U(&d, 3, 7, 8, 20, 299);
	w_A(&d, 4, 9, 'B', 1, 98);
	w_A(&d, 4, 10, 'B', 1, 100);
	w_A(&d, 4, 11, 'B', 1, 99);
	w_A(&d, 5, 12, 'S', 1, 1);
	w_D(&d, 5, 12);
	fclose(d.f);
	int st;
	char *out = books(path, "", &st);
	assert_int_equal(st, 0);
	assert_string_equal(
	    out, "{\"symbol\":\"A\",\"bid\":[],\"ask\":[[299,20,1]]}\n"
	         "{\"symbol\":\"AB\",\"bid\":[[5000,2,2],[4900,3,1]],\"ask\":[[5100,7,1]]}\n"
	         "{\"symbol\":\"B\",\"bid\":[[100,1,1],[99,1,1],[98,1,1]],\"ask\":[]}\n"
	         "{\"symbol\":\"b\",\"bid\":[[10000,100,1]],\"ask\":[[10100,5,1]]}\n");
	free(out);
	out = books(path, "--depth 2", &st);
	assert_int_equal(st, 0);
	assert_string_equal(
	    out, "{\"symbol\":\"A\",\"bid\":[],\"ask\":[[299,20,1]]}\n"
	         "{\"symbol\":\"AB\",\"bid\":[[5000,2,2],[4900,3,1]],\"ask\":[[5100,7,1]]}\n"
	         "{\"symbol\":\"B\",\"bid\":[[100,1,1],[99,1,1]],\"ask\":[]}\n"
	         "{\"symbol\":\"b\",\"bid\":[[10000,100,1]],\"ask\":[[10100,5,1]]}\n");
	free(out);
	/* Bad usage is status 2 with nothing on stdout. */
	out = books(path, "--depth 0", &st);
	assert_int_equal(st, 2);
	assert_string_equal(out, "");
	free(out);
	out = books(path, "--frobnicate", &st);
	assert_int_equal(st, 2);
	free(out);
	/* An integrity error still prints the books, says so in the status, and marks the
	 * book it put in doubt (the unknown reference's locate, 4: "B") stale, as uf-tail
	 * --books marks it from a live feed's image; the others stay as they were. */
	d.f = fopen(path, "ab");
	w_D(&d, 4, 777);
	w_D(&d, 5, 778); /* the EMPTY book, in doubt now: printed, empty and marked */
	fclose(d.f);
	out = books(path, "--depth 1", &st);
	assert_int_equal(st, 1);
	assert_string_equal(out,
	                    "{\"symbol\":\"A\",\"bid\":[],\"ask\":[[299,20,1]]}\n"
	                    "{\"symbol\":\"AB\",\"bid\":[[5000,2,2]],\"ask\":[[5100,7,1]]}\n"
	                    "{\"symbol\":\"B\",\"bid\":[[100,1,1]],\"ask\":[],\"stale\":true}\n"
	                    "{\"symbol\":\"EMPTY\",\"bid\":[],\"ask\":[],\"stale\":true}\n"
	                    "{\"symbol\":\"b\",\"bid\":[[10000,100,1]],\"ask\":[[10100,5,1]]}\n");
	free(out);
	unlink(path);
	out = books("/nonexistent/file.itch", "", &st);
	assert_int_equal(st, 2);
	free(out);
}

static void test_books_on_generated_day_is_what_the_model_predicts(void **state)
{
	(void)state;
	need_binary();
	char gen[512], path[128], cmd[1024];
	snprintf(gen, sizeof(gen), "%s/uf-gen", bin_dir());
	if (access(gen, X_OK) != 0) {
		print_error("uf-gen not built at %s\n", gen);
		fail();
	}
	snprintf(path, sizeof(path), "/tmp/uf-pub-cli-gen-%d.itch", (int)getpid());
	snprintf(cmd, sizeof(cmd), "%s --out %s --messages 300000 --symbols 200 --seed 3", gen,
	         path);
	assert_int_equal(system(cmd), 0);
	struct ref_model *r = malloc(sizeof(*r));
	struct sym_map *s = calloc(1, sizeof(*s));
	ref_init(r, 4000000, 65536);
	pub_model_from_file(r, s, path, 65536);
	int st;
	for (size_t depth = 0; depth <= 5; depth += 5) {
		char *want = model_books_json(r, s, depth);
		char *got = books(path, depth ? "--depth 5" : "", &st);
		assert_int_equal(st, 0);
		assert_true(strlen(want) > 1000);
		assert_string_equal(got, want);
		free(want);
		free(got);
	}
	unlink(path);
	ref_free(r);
	free(r);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_books_prints_sorted_json_lines_best_first),
	    cmocka_unit_test(test_books_on_generated_day_is_what_the_model_predicts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
