/*
 * ag_metrics.h - muster-agent's /metrics (--metrics-addr): per GPU
 * utilisation, memory, temperature, health, XID and ECC counters; runs;
 * the stream to muster-api (connected, reconnects).
 *
 * Labels: node (this agent's), gpu (index), model, xid (NVIDIA's codes, a
 * bounded set; at most AG_METRICS_MAX_XIDS distinct per GPU are kept).
 * Threading: the record functions are called by the main loop; the scrape
 * runs on the metrics thread; a mutex joins them.
 */
#ifndef MU_AG_METRICS_H
#define MU_AG_METRICS_H

#include <stdbool.h>

#include "agent.h"

#define AG_METRICS_MAX_XIDS 32

/* addr "" = off. Returns 0 or a MU_E* code (logged). */
int ag_metrics_start(const char *addr, const char *node);
void ag_metrics_stop(void);

/* After each GPU poll: the figures, and the XIDs not yet counted. */
void ag_metrics_gpus(const struct ag_gpus *g);
/* The GPUs' XID lists were emptied (delivered in a heartbeat). */
void ag_metrics_xids_cleared(void);
void ag_metrics_runs(int live, bool stream_connected);
void ag_metrics_run_started(void);
void ag_metrics_stream_reconnect(void);

#endif
