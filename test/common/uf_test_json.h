/* Reading a parsed JSON document (jansson) in a test. Include after cmocka.h. */
#ifndef UF_TEST_JSON_H
#define UF_TEST_JSON_H

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The integer at `path` ("feeds/0/lines/1/wins": object keys, and array indexes where the
 * value is an array) in root; fails the test, naming the path, when it is missing or not an
 * integer. */
static inline json_int_t uf_test_json_int(json_t *root, const char *path)
{
	json_t *v = root;
	char buf[256], *save = NULL;
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *t = strtok_r(buf, "/", &save); t && v; t = strtok_r(NULL, "/", &save)) {
		char *end;
		long idx = strtol(t, &end, 10);
		v = *end == '\0' && json_is_array(v) ? json_array_get(v, (size_t)idx)
		                                     : json_object_get(v, t);
	}
	if (!v || !json_is_integer(v))
		fail_msg("%s: missing or not an integer", path);
	return json_integer_value(v);
}

#endif /* UF_TEST_JSON_H */
