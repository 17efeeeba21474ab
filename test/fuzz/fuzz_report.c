/*
 * The cost report on hostile input: the streaming List reader (window
 * refills, items split anywhere), every item through the scanner or jansson,
 * the YAML path, the judging and all three writers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "report/report.h"

static struct config *cfg;
static FILE *devnull;
static int fd = -1;

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	static const char policy[] =
		"pools:\n"
		"  - {name: t4, nodeSelector: {agentpool: gput4}, pricePerNodeHour: 0.5, gpusPerNode: 1}\n"
		"  - {name: h100, nodeSelector: {agentpool: gpuh100}, pricePerNodeHour: 98.32}\n";
	char path[] = "/tmp/fuzz_report.XXXXXX";
	struct error err;
	struct report r;

	if (cfg == NULL) {
		if ((cfg = config_load_buffer(policy, sizeof policy - 1, "policy", &err)) == NULL ||
		    (devnull = fopen("/dev/null", "w")) == NULL || (fd = mkstemp(path)) < 0)
			abort();
		unlink(path);
	}
	if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size || lseek(fd, 0, SEEK_SET) != 0)
		abort();
	memset(&r, 0, sizeof r);
	if (report_init(&r, cfg, &err) == 0 && report_input(&r, "fuzz", fd, &err) == 0 &&
	    report_finish(&r, &err) == 0) {
		if (report_text_write(&r, devnull, 1) != 0 || report_json_write(&r, devnull, 0, 'j') != 0 ||
		    report_prom_write(&r, devnull) != 0)
			abort();
	} else if (err.kind != ERROR_NOMEM && err.kind != ERROR_TOO_LARGE) {
		abort();  /* anything else in the input is an input error in the report, not a failure */
	}
	report_free(&r);
	return 0;
}
