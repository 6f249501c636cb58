/*
 * gpu_fake.c - N pretend GPUs whose faults a test injects while the agent
 * runs, by appending lines to `<state dir>/fault`:
 *   gpu 3 xid 79     GPU 3 reports XID 79 (a fatal XID also marks it unhealthy)
 *   gpu 1 healthy    GPU 1 is healthy again
 * Lines are applied once each, in order; '#' starts a comment.
 * Also: the fabric link check (sysfs operstate) and the backend switch.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "alloc.h"
#include "log.h"

int ag_fault_parse_line(const char *line, int *gpu, int *xid)
{
	char word[16], what[16];
	int idx, val, consumed = 0;
	while (isspace((unsigned char)*line))
		line++;
	if (!*line || *line == '#')
		return MU_EINVAL;
	if (sscanf(line, "%15s %d %15s %n", word, &idx, what, &consumed) != 3 || consumed == 0)
		return MU_EINVAL;
	if (strcasecmp(word, "gpu") != 0 || idx < 0 || idx >= AG_MAX_GPUS)
		return MU_EINVAL;
	if (strcasecmp(what, "healthy") == 0) {
		for (const char *p = line + consumed; *p; p++)
			if (!isspace((unsigned char)*p))
				return MU_EINVAL;
		*gpu = idx;
		*xid = 0;
		return 0;
	}
	if (strcasecmp(what, "xid") != 0)
		return MU_EINVAL;
	int used = 0;
	if (sscanf(line + consumed, "%d %n", &val, &used) != 1 || val <= 0 || val > 100000)
		return MU_EINVAL;
	if (line[consumed + used] != '\0')
		return MU_EINVAL;
	*gpu = idx;
	*xid = val;
	return 0;
}

static bool fatal_xid(int xid)
{
	static const int fatal[] = { 48, 63, 64, 74, 79, 94, 95, 119 };
	for (size_t i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++)
		if (fatal[i] == xid)
			return true;
	return false;
}

int ag_fake_apply(struct ag_gpus *g, const char *line)
{
	int idx, xid;
	if (ag_fault_parse_line(line, &idx, &xid) != 0 || idx >= g->n)
		return MU_EINVAL;
	struct ag_gpu *gpu = &g->gpu[idx];
	if (xid == 0) {
		gpu->healthy = true;
		mu_info("gpu=%d fake fault cleared: healthy", idx);
		return 0;
	}
	if (gpu->nxids < AG_MAX_XIDS)
		gpu->xids[gpu->nxids++] = xid;
	if (fatal_xid(xid))
		gpu->healthy = false;
	mu_warn("gpu=%d fake fault: XID %d", idx, xid);
	return 0;
}

int ag_gpus_open_fake(struct ag_gpus *g, int count, const char *model, long long memory_mb,
		      const char *node, const char *state_dir)
{
	memset(g, 0, sizeof(*g));
	if (count < 0 || count > AG_MAX_GPUS)
		return MU_EINVAL;
	g->kind = AG_GPU_FAKE;
	g->n = count;
	snprintf(g->fault_path, sizeof(g->fault_path), "%s/fault", state_dir);
	/* a fault file left from before this start was already applied */
	FILE *f = fopen(g->fault_path, "r");
	if (f) {
		fseek(f, 0, SEEK_END);
		g->fault_done = ftell(f);
		fclose(f);
	}
	/* stable per node name, so a restarted agent reports the same UUIDs */
	unsigned h = 2166136261u;
	for (const char *p = node; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	for (int i = 0; i < count; i++) {
		struct ag_gpu *gpu = &g->gpu[i];
		gpu->index = i;
		gpu->minor = i;
		snprintf(gpu->uuid, sizeof(gpu->uuid), "GPU-fake%08x-0000-4000-8000-%012d", h, i);
		snprintf(gpu->model, sizeof(gpu->model), "%s", model);
		gpu->memory_mb = memory_mb;
		gpu->temperature = 35;
		gpu->healthy = true;
	}
	return 0;
}

static void fake_poll(struct ag_gpus *g)
{
	FILE *f = fopen(g->fault_path, "r");
	if (!f)
		return;
	if (fseek(f, g->fault_done, SEEK_SET) != 0) {
		fclose(f);
		return;
	}
	char line[256];
	while (fgets(line, sizeof(line), f)) {
		size_t len = strlen(line);
		if (len == 0 || line[len - 1] != '\n')
			break; /* a line still being written: take it next time */
		g->fault_done += (long)len;
		line[len - 1] = '\0';
		if (ag_fake_apply(g, line) != 0 && line[0] && line[0] != '#')
			mu_warn("fault=%s bad line ignored: %s", g->fault_path, line);
	}
	fclose(f);
}

int ag_gpus_open_nvml(struct ag_gpus *g, struct mu_error *err)
{
	memset(g, 0, sizeof(*g));
	g->kind = AG_GPU_NVML;
	return ag_nvml_open(g, err);
}

void ag_gpus_poll(struct ag_gpus *g)
{
	if (g->kind == AG_GPU_FAKE)
		fake_poll(g);
	else
		ag_nvml_poll(g);
}

void ag_gpus_close(struct ag_gpus *g)
{
	if (g->kind == AG_GPU_NVML)
		ag_nvml_close(g);
}

bool ag_link_up(const char *root, const char *iface)
{
	char path[4200], state[32] = "";
	snprintf(path, sizeof(path), "%s/%s/operstate", root, iface);
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	if (!fgets(state, sizeof(state), f))
		state[0] = '\0';
	fclose(f);
	state[strcspn(state, "\n")] = '\0';
	return strcmp(state, "up") == 0;
}
