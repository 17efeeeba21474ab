/*
 * bench_model: the report's model (pkg/report/report_model.h) fed a watch
 * event stream (test/tools/gen_events), one event at a time as a watch
 * would: each line parsed (report_event_parse: only the fields the report
 * reads), applied, freed. Reports events per second of CPU time (one core:
 * the process's CPU clock), RSS after the nodes, after the initial list and
 * at the end, memory per node and per pod, what the running GPU pods' texts
 * for the what-if take (report_model.h), and the time to build the report of
 * the final state, and its what-if by the same policy (every running GPU pod
 * judged twice, none refused). Figures, never assertions (issue 25's goal: the whole
 * 150,000-pod cluster in <= 256 MB, >= 10,000 events/s on one core).
 *
 *   bench_model POLICY.yaml EVENTS.jsonl
 *
 * Last line: one JSON object with the figures.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "report/report.h"
#include "report/report_model.h"

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* VmRSS (or VmHWM) of this process, in KiB. */
static long status_kb(const char *field)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;
	size_t n = strlen(field);

	while (f != NULL && fgets(line, sizeof line, f) != NULL)
		if (strncmp(line, field, n) == 0 && line[n] == ':')
			kb = strtol(line + n + 1, NULL, 10);
	if (f != NULL)
		fclose(f);
	return kb;
}

int main(int argc, char **argv)
{
	struct error err = { 0 };
	struct config *cfg;
	struct report_model *m;
	struct report_model_stats st;
	struct report r;
	FILE *in;
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	unsigned long events = 0, list_events = 0, bad = 0, nodes_at = 0;
	long rss0, rss_nodes = -1, rss_list = -1, rss_end;
	double t0, t_list = 0, t_end, t_report, t_whatif;
	int in_list = 1;

	if (argc != 3) {
		fprintf(stderr, "usage: bench_model POLICY.yaml EVENTS.jsonl\n");
		return 2;
	}
	if ((cfg = config_load_file(argv[1], &err)) == NULL || (m = report_model_new(cfg, &err)) == NULL ||
	    (in = fopen(argv[2], "r")) == NULL) {
		fprintf(stderr, "bench_model: %s\n", err.msg[0] ? err.msg : argv[2]);
		return 1;
	}
	rss0 = status_kb("VmRSS");
	t0 = cpu_now();
	while ((len = getline(&line, &cap, in)) > 0) {
		enum report_event_type type;
		json_error_t jerr;
		json_t *obj = report_event_parse(line, (size_t)len, &type, &jerr);
		const char *kind = json_string_value(json_object_get(obj, "kind"));

		if (obj == NULL) {
			bad++;
			continue;
		}
		if (rss_nodes < 0 && kind != NULL && strcmp(kind, "Pod") == 0) {
			rss_nodes = status_kb("VmRSS");
			report_model_stats(m, &st);
			nodes_at = st.nodes;
		}
		if (in_list && type != REPORT_EVENT_ADDED) {  /* the churn starts */
			in_list = 0;
			t_list = cpu_now() - t0;
			list_events = events;
			rss_list = status_kb("VmRSS");
		}
		if (report_model_apply(m, type, obj, &err) != 0) {
			fprintf(stderr, "bench_model: %s\n", err.msg);
			return 1;
		}
		json_decref(obj);
		events++;
	}
	t_end = cpu_now() - t0;
	if (in_list) {
		t_list = t_end;
		list_events = events;
		rss_list = status_kb("VmRSS");
	}
	rss_end = status_kb("VmRSS");
	report_model_stats(m, &st);
	t_report = cpu_now();
	memset(&r, 0, sizeof r);
	if (report_model_report(m, &r, &err) != 0) {
		fprintf(stderr, "bench_model: report: %s\n", err.msg);
		return 1;
	}
	t_report = cpu_now() - t_report;
	report_free(&r);
	t_whatif = cpu_now();
	memset(&r, 0, sizeof r);
	if (report_model_whatif(m, cfg, "same", &r, &err) != 0) {
		fprintf(stderr, "bench_model: what-if: %s\n", err.msg);
		return 1;
	}
	t_whatif = cpu_now() - t_whatif;
	{
		char summary[1024];

		report_summary_line(&r, summary, sizeof summary);
		printf("report of the final state: %s\n", summary);
	}
	printf("model: %lu events (%lu in the initial list, %lu unreadable) in %.2f s CPU: %.0f events/s; "
	       "list %.0f events/s, churn %.0f events/s\n", events, list_events, bad, t_end,
	       t_end > 0 ? (double)events / t_end : 0, t_list > 0 ? (double)list_events / t_list : 0,
	       t_end > t_list ? (double)(events - list_events) / (t_end - t_list) : 0);
	printf("model: %lu nodes, %lu pods (%lu kept as text, %.1f MB), %lu refused; RSS %.1f MB at start, %.1f MB after "
	       "the nodes, %.1f MB after the list, %.1f MB at the end (peak %.1f MB); %.1f KB per node, %.0f bytes "
	       "per pod; report of the final state %.0f ms\n", st.nodes, st.pods, st.kept_pods, st.kept_bytes / 1048576.0,
	       st.refused,
	       rss0 / 1024.0, rss_nodes / 1024.0, rss_list / 1024.0, rss_end / 1024.0, status_kb("VmHWM") / 1024.0,
	       nodes_at ? (double)(rss_nodes - rss0) / (double)nodes_at : 0,
	       st.pods ? (double)(rss_list - rss_nodes) * 1024.0 / (double)(list_events - nodes_at) : 0,
	       t_report * 1000);
	printf("model: running GPU pods' texts for the what-if: %lu, %lu bytes (%.0f bytes each); what-if of "
	       "the final state %.0f ms\n", st.judged, st.judged_bytes,
	       st.judged ? (double)st.judged_bytes / (double)st.judged : 0, t_whatif * 1000);
	printf("{\"events\": %lu, \"events_per_s\": %.0f, \"nodes\": %lu, \"pods\": %lu, \"rss_mb\": %.1f, "
	       "\"peak_rss_mb\": %.1f, \"kb_per_node\": %.1f, \"bytes_per_pod\": %.0f, \"report_ms\": %.0f, "
	       "\"judged_texts\": %lu, \"judged_bytes\": %lu, \"whatif_ms\": %.0f}\n",
	       events, t_end > 0 ? (double)events / t_end : 0, st.nodes, st.pods, rss_end / 1024.0,
	       status_kb("VmHWM") / 1024.0, nodes_at ? (double)(rss_nodes - rss0) / (double)nodes_at : 0,
	       list_events > nodes_at ? (double)(rss_list - rss_nodes) * 1024.0 / (double)(list_events - nodes_at) : 0,
	       t_report * 1000, st.judged, st.judged_bytes, t_whatif * 1000);
	free(line);
	fclose(in);
	report_free(&r);
	report_model_free(m);
	config_free(cfg);
	return 0;
}
