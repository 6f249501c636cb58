/*
 * gpu_nvml.c - real GPUs through NVML, loaded at run time with
 * dlopen("libnvidia-ml.so.1") so the agent builds and runs (fake backend)
 * on machines without the NVIDIA driver. Only the few functions used are
 * declared here, with the types of nvml.h.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "agent.h"
#include "alloc.h"
#include "log.h"

typedef int nvmlReturn_t; /* NVML_SUCCESS = 0 */
typedef void *nvmlDevice_t;
typedef void *nvmlEventSet_t;
typedef struct {
	unsigned long long total, free, used;
} nvmlMemory_t;
typedef struct {
	unsigned int gpu, memory;
} nvmlUtilization_t;
typedef struct {
	nvmlDevice_t device;
	unsigned long long eventType;
	unsigned long long eventData;
	unsigned int gpuInstanceId;
	unsigned int computeInstanceId;
} nvmlEventData_t;

#define NVML_SUCCESS 0
#define NVML_TEMPERATURE_GPU 0
#define NVML_EVENT_XID_CRITICAL 0x8ULL
#define NVML_MEMORY_ERROR_UNCORRECTED 1
#define NVML_VOLATILE_ECC 0

struct nvml {
	void *lib;
	nvmlReturn_t (*init)(void);
	nvmlReturn_t (*shutdown)(void);
	const char *(*error_string)(nvmlReturn_t);
	nvmlReturn_t (*count)(unsigned int *);
	nvmlReturn_t (*by_index)(unsigned int, nvmlDevice_t *);
	nvmlReturn_t (*uuid)(nvmlDevice_t, char *, unsigned int);
	nvmlReturn_t (*name)(nvmlDevice_t, char *, unsigned int);
	nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t *);
	nvmlReturn_t (*minor)(nvmlDevice_t, unsigned int *);
	nvmlReturn_t (*util)(nvmlDevice_t, nvmlUtilization_t *);
	nvmlReturn_t (*temp)(nvmlDevice_t, int, unsigned int *);
	nvmlReturn_t (*ecc)(nvmlDevice_t, int, int, unsigned long long *);
	nvmlReturn_t (*set_create)(nvmlEventSet_t *);
	nvmlReturn_t (*register_events)(nvmlDevice_t, unsigned long long, nvmlEventSet_t);
	nvmlReturn_t (*set_wait)(nvmlEventSet_t, nvmlEventData_t *, unsigned int);
	nvmlReturn_t (*set_free)(nvmlEventSet_t);
	nvmlEventSet_t set;
	nvmlDevice_t dev[AG_MAX_GPUS];
};

static const char *nv_err(struct nvml *nv, nvmlReturn_t r)
{
	return nv->error_string ? nv->error_string(r) : "NVML error";
}

#define SYM(field, name, required)                                                      \
	do {                                                                            \
		*(void **)&nv->field = dlsym(nv->lib, name);                            \
		if (!nv->field && (required)) {                                         \
			rc = mu_error_set(err, MU_EUNAVAIL, "gpu-backend",               \
					  "libnvidia-ml.so.1 has no %s", name);          \
			goto out;                                                       \
		}                                                                       \
	} while (0)

int ag_nvml_open(struct ag_gpus *g, struct mu_error *err)
{
	int rc = 0;
	unsigned int n = 0;
	struct nvml *nv = mu_calloc(1, sizeof(*nv));
	nv->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!nv->lib) {
		rc = mu_error_set(err, MU_EUNAVAIL, "gpu-backend",
				  "cannot load libnvidia-ml.so.1 (is the NVIDIA driver installed? "
				  "use --gpu-backend fake without GPUs): %s", dlerror());
		goto out;
	}
	SYM(init, "nvmlInit_v2", true);
	SYM(shutdown, "nvmlShutdown", true);
	SYM(error_string, "nvmlErrorString", false);
	SYM(count, "nvmlDeviceGetCount_v2", true);
	SYM(by_index, "nvmlDeviceGetHandleByIndex_v2", true);
	SYM(uuid, "nvmlDeviceGetUUID", true);
	SYM(name, "nvmlDeviceGetName", true);
	SYM(memory, "nvmlDeviceGetMemoryInfo", true);
	SYM(minor, "nvmlDeviceGetMinorNumber", false);
	SYM(util, "nvmlDeviceGetUtilizationRates", false);
	SYM(temp, "nvmlDeviceGetTemperature", false);
	SYM(ecc, "nvmlDeviceGetTotalEccErrors", false);
	SYM(set_create, "nvmlEventSetCreate", false);
	SYM(register_events, "nvmlDeviceRegisterEvents", false);
	SYM(set_wait, "nvmlEventSetWait_v2", false);
	SYM(set_free, "nvmlEventSetFree", false);
	nvmlReturn_t r = nv->init();
	if (r != NVML_SUCCESS) {
		rc = mu_error_set(err, MU_EUNAVAIL, "gpu-backend", "nvmlInit_v2: %s", nv_err(nv, r));
		goto out;
	}
	if ((r = nv->count(&n)) != NVML_SUCCESS) {
		rc = mu_error_set(err, MU_EUNAVAIL, "gpu-backend", "nvmlDeviceGetCount_v2: %s",
				  nv_err(nv, r));
		goto out;
	}
	if (n > AG_MAX_GPUS)
		n = AG_MAX_GPUS;
	if (nv->set_create && nv->set_create(&nv->set) != NVML_SUCCESS)
		nv->set = NULL;
	for (unsigned int i = 0; i < n; i++) {
		struct ag_gpu *gpu = &g->gpu[i];
		nvmlMemory_t mem = { 0 };
		if ((r = nv->by_index(i, &nv->dev[i])) != NVML_SUCCESS) {
			rc = mu_error_set(err, MU_EUNAVAIL, "gpu-backend", "GPU %u: %s", i,
					  nv_err(nv, r));
			goto out;
		}
		gpu->index = (int)i;
		gpu->healthy = true;
		/* the device node the cgroup must deny is /dev/nvidia<minor>, which
		 * differs from the index when GPUs are reordered or hidden */
		unsigned int minor = i;
		if (nv->minor && nv->minor(nv->dev[i], &minor) != NVML_SUCCESS)
			minor = i;
		gpu->minor = (int)minor;
		nv->uuid(nv->dev[i], gpu->uuid, sizeof(gpu->uuid));
		nv->name(nv->dev[i], gpu->model, sizeof(gpu->model));
		if (nv->memory(nv->dev[i], &mem) == NVML_SUCCESS)
			gpu->memory_mb = (long long)(mem.total >> 20);
		if (nv->set && nv->register_events &&
		    nv->register_events(nv->dev[i], NVML_EVENT_XID_CRITICAL, nv->set) != NVML_SUCCESS)
			mu_warn("gpu=%u XID events not supported: XIDs will not be reported", i);
	}
	g->n = (int)n;
	g->nvml = nv;
	mu_info("nvml gpus=%u", n);
out:
	if (rc) {
		if (nv->lib) {
			if (nv->set && nv->set_free)
				nv->set_free(nv->set);
			if (nv->shutdown && nv->init)
				nv->shutdown();
			dlclose(nv->lib);
		}
		mu_free(nv);
	}
	return rc;
}

void ag_nvml_poll(struct ag_gpus *g)
{
	struct nvml *nv = g->nvml;
	if (!nv)
		return;
	for (int i = 0; i < g->n; i++) {
		struct ag_gpu *gpu = &g->gpu[i];
		nvmlMemory_t mem;
		nvmlUtilization_t u;
		unsigned int t;
		unsigned long long ecc;
		if (nv->memory(nv->dev[i], &mem) == NVML_SUCCESS)
			gpu->memory_used_mb = (long long)(mem.used >> 20);
		if (nv->util && nv->util(nv->dev[i], &u) == NVML_SUCCESS)
			gpu->utilization = (int)u.gpu;
		if (nv->temp && nv->temp(nv->dev[i], NVML_TEMPERATURE_GPU, &t) == NVML_SUCCESS)
			gpu->temperature = (int)t;
		if (nv->ecc && nv->ecc(nv->dev[i], NVML_MEMORY_ERROR_UNCORRECTED, NVML_VOLATILE_ECC,
				       &ecc) == NVML_SUCCESS)
			gpu->ecc_errors = (long long)ecc;
	}
	if (!nv->set || !nv->set_wait)
		return;
	for (int k = 0; k < 64; k++) { /* drain the events queued since the last poll */
		nvmlEventData_t ev;
		memset(&ev, 0, sizeof(ev));
		if (nv->set_wait(nv->set, &ev, 0) != NVML_SUCCESS)
			break;
		if (!(ev.eventType & NVML_EVENT_XID_CRITICAL))
			continue;
		for (int i = 0; i < g->n; i++) {
			if (nv->dev[i] != ev.device)
				continue;
			char line[64];
			snprintf(line, sizeof(line), "gpu %d xid %llu", i, ev.eventData);
			ag_fake_apply(g, line); /* same bookkeeping as an injected fault */
		}
	}
}

void ag_nvml_close(struct ag_gpus *g)
{
	struct nvml *nv = g->nvml;
	if (!nv)
		return;
	if (nv->set && nv->set_free)
		nv->set_free(nv->set);
	nv->shutdown();
	dlclose(nv->lib);
	mu_free(nv);
	g->nvml = NULL;
}
