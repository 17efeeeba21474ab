/* report_fixture.c: see report_fixture.h. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "report_fixture.h"

int report_fixture_judge(const char *yaml, const char *text, struct config **cfg, struct report *r)
{
	struct error err = { 0 };
	FILE *f = tmpfile();
	int fd = -1, rc = -1;

	*cfg = config_load_buffer(yaml, strlen(yaml), "policy.yaml", &err);
	if (f == NULL || *cfg == NULL || fputs(text, f) < 0 || fflush(f) != 0)
		goto out;
	fd = dup(fileno(f));
	lseek(fd, 0, SEEK_SET);
	if (report_init(r, *cfg, &err) != 0 || report_input(r, "t", fd, &err) != 0 || report_finish(r, &err) != 0)
		goto out;
	rc = 0;
out:
	if (rc != 0)
		fprintf(stderr, "  %s\n", err.msg);
	if (fd >= 0)
		close(fd);
	if (f != NULL)
		fclose(f);
	return rc;
}
