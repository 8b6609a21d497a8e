/* The engine's log hook (feed/feed_log.h): an embedder's function gets every line with its
 * level, formatted and cut at 1 KiB, errno survives the call, and NULL goes back to stderr
 * (checked by pointing fd 2 at a file for the call). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "feed/uf_feed.h"

struct seen {
	int calls;       /* lines received */
	int level;       /* level of the last one */
	char line[2048]; /* the last line */
};

static void hook(void *ctx, int level, const char *line)
{
	struct seen *s = ctx;
	s->calls++;
	s->level = level;
	snprintf(s->line, sizeof(s->line), "%s", line);
}

static void test_feed_log_hook_gets_lines(void **state)
{
	(void)state;
	struct seen s = {0};
	uf_feed_set_log(hook, &s);
	errno = EAGAIN;
	uf_feed_log_warn("feed %s line %c: %d bytes", "x", 'A', 42);
	assert_int_equal(errno, EAGAIN);
	assert_int_equal(s.calls, 1);
	assert_int_equal(s.level, UF_FEED_LOG_WARN);
	assert_string_equal(s.line, "feed x line A: 42 bytes");
	char big[1500];
	memset(big, 'z', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	uf_feed_log_info("%s", big);
	assert_int_equal(s.level, UF_FEED_LOG_INFO);
	assert_int_equal(strlen(s.line), 1023); /* cut, still terminated */
	uf_feed_set_log(NULL, NULL);
}

static void test_feed_log_default_is_stderr(void **state)
{
	(void)state;
	char path[] = "/tmp/uf_feed_log_XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	fflush(stderr);
	int saved = dup(2);
	assert_true(saved >= 0);
	assert_int_equal(dup2(fd, 2), 2);
	uf_feed_set_log(NULL, NULL);
	uf_feed_log_warn("to stderr %d", 7);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	char buf[256] = {0};
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	close(fd);
	assert_true(n > 0);
	assert_string_equal(buf, "uringfeed WARN: to stderr 7\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_feed_log_hook_gets_lines),
	    cmocka_unit_test(test_feed_log_default_is_stderr),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
