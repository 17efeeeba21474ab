/*
 * report_fixture.h: the report tests' way to judge a snapshot: a policy's
 * YAML and a `kubectl get -o json` text in, a finished report out.
 */
#ifndef GPU_ADMISSION_REPORT_FIXTURE_H
#define GPU_ADMISSION_REPORT_FIXTURE_H

#include "report/report.h"

/*
 * Reads text as one input of a report under policy yaml into r (*cfg the
 * loaded policy, the caller's to free with config_free, as r with
 * report_free); the report is finished. 0, or -1 with the error on stderr.
 */
int report_fixture_judge(const char *yaml, const char *text, struct config **cfg, struct report *r);

#endif
