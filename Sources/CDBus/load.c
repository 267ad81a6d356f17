// Loads libdbus-1 with dlopen and fills notty_dbus_table (see include/CDBus.h).
#include "CDBus.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

struct notty_dbus_functions notty_dbus_table;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int loaded = 0;
static char failure[512];

static void load(void) {
    void *library = dlopen(NOTTY_DBUS_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        const char *reason = dlerror();
        snprintf(failure, sizeof failure, "%s", reason ? reason : "cannot open " NOTTY_DBUS_LIBRARY);
        return;
    }
    void *symbol;
#define NOTTY_DBUS_FIND(name)                                                                  \
    symbol = dlsym(library, #name);                                                            \
    if (symbol == NULL) {                                                                      \
        snprintf(failure, sizeof failure, NOTTY_DBUS_LIBRARY " has no %s", #name);            \
        dlclose(library);                                                                      \
        memset(&notty_dbus_table, 0, sizeof notty_dbus_table);                                \
        return;                                                                                \
    }                                                                                          \
    memcpy(&notty_dbus_table.name, &symbol, sizeof symbol);
#define NOTTY_DBUS_FIND_RETURNING(type, name, parameters, arguments) NOTTY_DBUS_FIND(name)
#define NOTTY_DBUS_FIND_VOID(name, parameters, arguments) NOTTY_DBUS_FIND(name)
    NOTTY_DBUS_FUNCTIONS(NOTTY_DBUS_FIND_RETURNING, NOTTY_DBUS_FIND_VOID)
    loaded = 1;
}

int notty_dbus_load(char *reason, size_t size) {
    pthread_once(&once, load);
    if (!loaded && reason != NULL && size > 0) snprintf(reason, size, "%s", failure);
    return loaded;
}
