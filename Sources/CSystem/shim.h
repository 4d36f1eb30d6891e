#ifndef BOUNCER_CSYSTEM_SHIM_H
#define BOUNCER_CSYSTEM_SHIM_H
// Linux kernel APIs that Glibc's Swift module map does not expose.
#include <sys/epoll.h>
#include <sys/eventfd.h>
#endif
