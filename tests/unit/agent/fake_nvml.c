/*
 * A stand-in libnvidia-ml.so.1 for unit.agent.nvml: the few NVML entry
 * points muster-agent declares, with nvml.h's signatures, over two
 * pretend GPUs. FAKE_NVML_XID=<n> makes the event set report XID n on GPU
 * 1 once. Exercises the real dlopen/dlsym path without a GPU.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
	int id;
} dev_t_;
typedef struct {
	void *device;
	unsigned long long eventType, eventData;
	unsigned int gpuInstanceId, computeInstanceId;
} ev_t;

static dev_t_ devs[2] = { { 0 }, { 1 } };
static int inited, registered, xid_sent;
static int set_obj;

int nvmlInit_v2(void)
{
	inited = 1;
	return 0;
}
int nvmlShutdown(void)
{
	inited = 0;
	return 0;
}
const char *nvmlErrorString(int r)
{
	return r ? "Fake NVML error" : "Success";
}
int nvmlDeviceGetCount_v2(unsigned int *n)
{
	*n = inited ? 2 : 0;
	return inited ? 0 : 1;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **dev)
{
	if (i > 1)
		return 2;
	*dev = &devs[i];
	return 0;
}
int nvmlDeviceGetUUID(void *dev, char *buf, unsigned int len)
{
	snprintf(buf, len, "GPU-nvmlfake-%d", ((dev_t_ *)dev)->id);
	return 0;
}
/* minors in the other order than the indices, as on a node whose GPUs
 * were enumerated differently by the driver */
int nvmlDeviceGetMinorNumber(void *dev, unsigned int *minor)
{
	*minor = 1u - (unsigned int)((dev_t_ *)dev)->id;
	return 0;
}
int nvmlDeviceGetName(void *dev, char *buf, unsigned int len)
{
	(void)dev;
	snprintf(buf, len, "NVIDIA H200");
	return 0;
}
int nvmlDeviceGetMemoryInfo(void *dev, unsigned long long *m /* total, free, used */)
{
	m[0] = 143771ULL << 20;
	m[2] = (unsigned long long)(1000 + ((dev_t_ *)dev)->id) << 20;
	m[1] = m[0] - m[2];
	return 0;
}
int nvmlDeviceGetUtilizationRates(void *dev, unsigned int *u /* gpu, memory */)
{
	u[0] = 40 + (unsigned)((dev_t_ *)dev)->id;
	u[1] = 10;
	return 0;
}
int nvmlDeviceGetTemperature(void *dev, int sensor, unsigned int *t)
{
	*t = sensor == 0 ? 50 + (unsigned)((dev_t_ *)dev)->id : 0;
	return 0;
}
int nvmlDeviceGetTotalEccErrors(void *dev, int type, int counter, unsigned long long *n)
{
	*n = (type == 1 && counter == 0) ? (unsigned long long)((dev_t_ *)dev)->id * 2 : 99;
	return 0;
}
int nvmlEventSetCreate(void **set)
{
	*set = &set_obj;
	return 0;
}
int nvmlDeviceRegisterEvents(void *dev, unsigned long long types, void *set)
{
	(void)dev;
	if (set != &set_obj || types != 0x8ULL)
		return 1;
	registered++;
	return 0;
}
int nvmlEventSetWait_v2(void *set, ev_t *ev, unsigned int timeout_ms)
{
	(void)timeout_ms;
	const char *x = getenv("FAKE_NVML_XID");
	if (set != &set_obj || registered < 2 || !x || xid_sent)
		return 10; /* NVML_ERROR_TIMEOUT */
	xid_sent = 1;
	memset(ev, 0, sizeof(*ev));
	ev->device = &devs[1];
	ev->eventType = 0x8ULL;
	ev->eventData = strtoull(x, NULL, 10);
	return 0;
}
int nvmlEventSetFree(void *set)
{
	(void)set;
	return 0;
}
