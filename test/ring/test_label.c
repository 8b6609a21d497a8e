/* uf_label_clean (common/uf_label.h): what a consumer-chosen tag becomes before any output
 * shows it. Each case: the raw field, what must come out. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/uf_label.h"

static void expect_clean(const char *raw, size_t rawlen, const char *want)
{
	char buf[16];
	memset(buf, 0, sizeof(buf));
	memcpy(buf, raw, rawlen < sizeof(buf) ? rawlen : sizeof(buf));
	size_t n = uf_label_clean(buf, sizeof(buf));
	if (strcmp(buf, want) != 0 || n != strlen(want))
		fail_msg("clean of %zu raw bytes: got \"%s\" (%zu), want \"%s\"", rawlen, buf, n,
		         want);
}

static void test_label_keeps_printable_ascii_and_whole_utf8(void **state)
{
	expect_clean("uf-tail", 7, "uf-tail");
	expect_clean("risk \"desk\" \\", 13, "risk \"desk\" \\");      /* escaped by renderers */
	expect_clean("\xc3\xa9quipe", 7, "\xc3\xa9quipe");             /* é */
	expect_clean("\xe2\x82\xac 5", 5, "\xe2\x82\xac 5");           /* € */
	expect_clean("\xf0\x9f\x93\x88 up", 7, "\xf0\x9f\x93\x88 up"); /* U+1F4C8 */
	expect_clean("", 0, "");
}

static void test_label_drops_a_character_the_field_end_cut(void **state)
{
	/* 15 bytes fit before the NUL: a 3-byte character starting at byte 13 is cut. */
	expect_clean("abcdefghijklm\xe2\x82\xac", 16, "abcdefghijklm");
	expect_clean("abcdefghijklmn\xc3\xa9", 16, "abcdefghijklmn");
	expect_clean("abcdefghijkl\xf0\x9f\x93\x88", 16, "abcdefghijkl");
	expect_clean("ab\xe2\x82", 4, "ab"); /* cut before the NUL, same thing */
}

static void test_label_replaces_controls_and_broken_bytes(void **state)
{
	expect_clean("a\nb", 3, "a?b");
	expect_clean("a\r\tb\x7f", 5, "a??b?");
	expect_clean("x\xc2\x85y", 4, "x?y");        /* C1 NEL, obeyed by terminals */
	expect_clean("\x80\x80z", 3, "??z");         /* lone continuation bytes */
	expect_clean("\xc0\xafz", 3, "??z");         /* overlong '/' */
	expect_clean("\xed\xa0\x80z", 4, "???z");    /* a surrogate */
	expect_clean("\xf5\x80\x80\x80", 4, "????"); /* past U+10FFFF */
	expect_clean("\xe2(\xac", 3, "?(?");         /* a lead byte not followed through */
	expect_clean("\xff\xfe", 2, "??");
}

/* A field with no NUL at all (a hostile consumer fills all 16 bytes): the last byte is
 * overwritten by the terminator, never read past. */
static void test_label_terminates_a_field_without_nul(void **state)
{
	char buf[16];
	memset(buf, 'A', sizeof(buf));
	assert_int_equal(uf_label_clean(buf, sizeof(buf)), 15);
	assert_int_equal(buf[15], '\0');
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_label_keeps_printable_ascii_and_whole_utf8),
	    cmocka_unit_test(test_label_drops_a_character_the_field_end_cut),
	    cmocka_unit_test(test_label_replaces_controls_and_broken_bytes),
	    cmocka_unit_test(test_label_terminates_a_field_without_nul),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
