/* caching_allocator_fake.c -- a fake device for testing the caching allocator on the CPU.
 * No PyTorch counterpart (PyTorch tests its allocator on a real GPU).
 *
 * Memory comes from the C library, at most `capacity` bytes at a time, so that tests see real,
 * distinct addresses and can run a device out of memory.  Each stream has a count of the
 * events recorded on it and of those whose work is done; work completes only when the test
 * calls ptl_fake_device_complete (a stream whose kernels are still running), and
 * event_synchronize completes it at once (the host waited for it).  Called with the caching
 * allocator's mutex held; complete() takes the device's own lock. */
#include "caching_allocator.h"

#include <pthread.h>
#include <stdlib.h>

#include "error.h"

typedef struct FakeEvent {
    PtlStreamId stream;
    int64_t seq;   /* done once the stream's completed count reaches it */
} FakeEvent;

struct PtlFakeDevice {
    pthread_mutex_t lock;
    size_t capacity;
    size_t used;
    int64_t live_events;
    int64_t recorded[PTL_FAKE_STREAMS];
    int64_t completed[PTL_FAKE_STREAMS];
};

/* Each block carries its size in a header, so free() knows how much to give back. */
#define HEADER 64

static int
fake_malloc(void *ctx, size_t nbytes, void **ptr)
{
    PtlFakeDevice *dev = ctx;
    int status = 1;
    pthread_mutex_lock(&dev->lock);
    if (nbytes <= dev->capacity - dev->used) {
        char *p = malloc(nbytes + HEADER);
        if (p == NULL) {
            status = ptl_error_set(PTL_ERR_MEMORY, "fake device: out of host memory");
        }
        else {
            *(size_t *)p = nbytes;
            *ptr = p + HEADER;
            dev->used += nbytes;
            status = 0;
        }
    }
    pthread_mutex_unlock(&dev->lock);
    return status;
}

static void
fake_free(void *ctx, void *ptr)
{
    PtlFakeDevice *dev = ctx;
    char *p = (char *)ptr - HEADER;
    pthread_mutex_lock(&dev->lock);
    dev->used -= *(size_t *)p;
    pthread_mutex_unlock(&dev->lock);
    free(p);
}

static int
fake_mem_get_info(void *ctx, size_t *free_bytes, size_t *total_bytes)
{
    PtlFakeDevice *dev = ctx;
    pthread_mutex_lock(&dev->lock);
    *free_bytes = dev->capacity - dev->used;
    *total_bytes = dev->capacity;
    pthread_mutex_unlock(&dev->lock);
    return 0;
}

static void *
fake_event_record(void *ctx, PtlStreamId stream)
{
    PtlFakeDevice *dev = ctx;
    if (stream >= PTL_FAKE_STREAMS) {
        ptl_error_set(PTL_ERR_VALUE, "fake device: stream %zu out of range",
                      (size_t)stream);
        return NULL;
    }
    FakeEvent *ev = malloc(sizeof(FakeEvent));
    if (ev == NULL) {
        ptl_error_set(PTL_ERR_MEMORY, "fake device: out of host memory");
        return NULL;
    }
    pthread_mutex_lock(&dev->lock);
    ev->stream = stream;
    ev->seq = ++dev->recorded[stream];
    dev->live_events++;
    pthread_mutex_unlock(&dev->lock);
    return ev;
}

static int
fake_event_query(void *ctx, void *event)
{
    PtlFakeDevice *dev = ctx;
    const FakeEvent *ev = event;
    pthread_mutex_lock(&dev->lock);
    int done = dev->completed[ev->stream] >= ev->seq;
    pthread_mutex_unlock(&dev->lock);
    return done;
}

static void
fake_event_synchronize(void *ctx, void *event)
{
    PtlFakeDevice *dev = ctx;
    const FakeEvent *ev = event;
    pthread_mutex_lock(&dev->lock);
    if (dev->completed[ev->stream] < ev->seq) {
        dev->completed[ev->stream] = ev->seq;
    }
    pthread_mutex_unlock(&dev->lock);
}

static void
fake_event_destroy(void *ctx, void *event)
{
    PtlFakeDevice *dev = ctx;
    pthread_mutex_lock(&dev->lock);
    dev->live_events--;
    pthread_mutex_unlock(&dev->lock);
    free(event);
}

const PtlDeviceMemoryOps ptl_fake_device_ops = {
    "CUDA", fake_malloc, fake_free, fake_mem_get_info, fake_event_record, fake_event_query,
    fake_event_synchronize, fake_event_destroy,
};

PtlFakeDevice *
ptl_fake_device_new(size_t capacity)
{
    PtlFakeDevice *dev = calloc(1, sizeof(PtlFakeDevice));
    if (dev == NULL) {
        ptl_error_set(PTL_ERR_MEMORY, "fake device: out of host memory");
        return NULL;
    }
    pthread_mutex_init(&dev->lock, NULL);
    dev->capacity = capacity;
    return dev;
}

void
ptl_fake_device_free(PtlFakeDevice *dev)
{
    if (dev != NULL) {
        pthread_mutex_destroy(&dev->lock);
        free(dev);
    }
}

void
ptl_fake_device_complete(PtlFakeDevice *dev, PtlStreamId stream)
{
    if (stream < PTL_FAKE_STREAMS) {
        pthread_mutex_lock(&dev->lock);
        dev->completed[stream] = dev->recorded[stream];
        pthread_mutex_unlock(&dev->lock);
    }
}

size_t
ptl_fake_device_used(const PtlFakeDevice *dev)
{
    return dev->used;
}

int64_t
ptl_fake_device_live_events(const PtlFakeDevice *dev)
{
    return dev->live_events;
}
