#ifndef BOUNCER_CPOSTGRES_SHIM_H
#define BOUNCER_CPOSTGRES_SHIM_H
#include <libpq-fe.h>
#endif
