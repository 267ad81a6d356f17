// libdbus-1, loaded at run time (dlopen) rather than linked: notty builds without
// libdbus-1-dev and runs where there is no D-Bus at all; only `notty poll --desktop` needs it.
//
// The types and functions notty uses are declared here on our side, with the ABI of
// libdbus-1.so.3 (stable since 2006): the public fields of DBusError, the size of
// DBusMessageIter, the enum values, and each function's parameters. Each function is a
// static inline wrapper of the same name that calls through a table filled by
// notty_dbus_load(), so the Swift code reads as libdbus's own API. Call notty_dbus_load()
// first: the wrappers assume it succeeded.
//
// The variadic dbus_message_append_args is not used: messages are built with DBusMessageIter.
// DBUS_TYPE_* are written as characters in Swift.
#ifndef NOTTY_CDBUS_H
#define NOTTY_CDBUS_H

#include <stddef.h>
#include <stdint.h>

typedef uint32_t dbus_uint32_t;
typedef dbus_uint32_t dbus_bool_t;

typedef struct DBusConnection DBusConnection;
typedef struct DBusMessage DBusMessage;
typedef struct DBusPendingCall DBusPendingCall;

/// An error: `name` and `message` are the public fields; the rest keeps libdbus's size.
typedef struct DBusError {
    const char *name;
    const char *message;
    unsigned int dummy1 : 1;
    unsigned int dummy2 : 1;
    unsigned int dummy3 : 1;
    unsigned int dummy4 : 1;
    unsigned int dummy5 : 1;
    void *padding1;
} DBusError;

/// A message iterator, allocated by the caller: opaque, but of libdbus's size and alignment.
typedef struct DBusMessageIter {
    void *dummy1;
    void *dummy2;
    dbus_uint32_t dummy3;
    int dummy4, dummy5, dummy6, dummy7, dummy8, dummy9, dummy10, dummy11;
    int pad1;
    void *pad2;
    void *pad3;
} DBusMessageIter;

typedef enum { DBUS_BUS_SESSION = 0, DBUS_BUS_SYSTEM = 1, DBUS_BUS_STARTER = 2 } DBusBusType;
typedef enum { DBUS_HANDLER_RESULT_HANDLED = 0, DBUS_HANDLER_RESULT_NOT_YET_HANDLED = 1, DBUS_HANDLER_RESULT_NEED_MEMORY = 2 } DBusHandlerResult;
typedef enum { DBUS_DISPATCH_DATA_REMAINS = 0, DBUS_DISPATCH_COMPLETE = 1, DBUS_DISPATCH_NEED_MEMORY = 2 } DBusDispatchStatus;

typedef DBusHandlerResult (*DBusHandleMessageFunction)(DBusConnection *connection, DBusMessage *message, void *user_data);
typedef void (*DBusFreeFunction)(void *memory);

// Every function notty calls: RETURNING(type, name, parameters, arguments) for those that
// answer, VOID(name, parameters, arguments) for those that do not.
#define NOTTY_DBUS_FUNCTIONS(RETURNING, VOID) \
    VOID(dbus_error_init, (DBusError *error), (error)) \
    VOID(dbus_error_free, (DBusError *error), (error)) \
    RETURNING(dbus_bool_t, dbus_error_is_set, (const DBusError *error), (error)) \
    RETURNING(dbus_bool_t, dbus_threads_init_default, (void), ()) \
    RETURNING(DBusConnection *, dbus_bus_get_private, (DBusBusType type, DBusError *error), (type, error)) \
    RETURNING(DBusConnection *, dbus_connection_open_private, (const char *address, DBusError *error), (address, error)) \
    RETURNING(dbus_bool_t, dbus_bus_register, (DBusConnection *connection, DBusError *error), (connection, error)) \
    VOID(dbus_bus_add_match, (DBusConnection *connection, const char *rule, DBusError *error), (connection, rule, error)) \
    VOID(dbus_connection_set_exit_on_disconnect, (DBusConnection *connection, dbus_bool_t exit), (connection, exit)) \
    VOID(dbus_connection_close, (DBusConnection *connection), (connection)) \
    VOID(dbus_connection_unref, (DBusConnection *connection), (connection)) \
    VOID(dbus_connection_flush, (DBusConnection *connection), (connection)) \
    RETURNING(dbus_bool_t, dbus_connection_add_filter, \
              (DBusConnection *connection, DBusHandleMessageFunction function, void *user_data, DBusFreeFunction free_data), \
              (connection, function, user_data, free_data)) \
    RETURNING(dbus_bool_t, dbus_connection_get_unix_fd, (DBusConnection *connection, int *fd), (connection, fd)) \
    RETURNING(dbus_bool_t, dbus_connection_read_write_dispatch, (DBusConnection *connection, int timeout), (connection, timeout)) \
    RETURNING(DBusDispatchStatus, dbus_connection_dispatch, (DBusConnection *connection), (connection)) \
    RETURNING(dbus_bool_t, dbus_connection_send, (DBusConnection *connection, DBusMessage *message, dbus_uint32_t *serial), \
              (connection, message, serial)) \
    RETURNING(DBusMessage *, dbus_connection_send_with_reply_and_block, \
              (DBusConnection *connection, DBusMessage *message, int timeout, DBusError *error), (connection, message, timeout, error)) \
    RETURNING(DBusMessage *, dbus_message_new_method_call, \
              (const char *destination, const char *path, const char *interface, const char *method), \
              (destination, path, interface, method)) \
    VOID(dbus_message_unref, (DBusMessage *message), (message)) \
    VOID(dbus_message_set_no_reply, (DBusMessage *message, dbus_bool_t no_reply), (message, no_reply)) \
    RETURNING(dbus_bool_t, dbus_message_is_signal, (DBusMessage *message, const char *interface, const char *name), \
              (message, interface, name)) \
    VOID(dbus_message_iter_init_append, (DBusMessage *message, DBusMessageIter *iter), (message, iter)) \
    RETURNING(dbus_bool_t, dbus_message_iter_append_basic, (DBusMessageIter *iter, int type, const void *value), (iter, type, value)) \
    RETURNING(dbus_bool_t, dbus_message_iter_open_container, \
              (DBusMessageIter *iter, int type, const char *signature, DBusMessageIter *sub), (iter, type, signature, sub)) \
    RETURNING(dbus_bool_t, dbus_message_iter_close_container, (DBusMessageIter *iter, DBusMessageIter *sub), (iter, sub)) \
    RETURNING(dbus_bool_t, dbus_message_iter_init, (DBusMessage *message, DBusMessageIter *iter), (message, iter)) \
    RETURNING(int, dbus_message_iter_get_arg_type, (DBusMessageIter *iter), (iter)) \
    VOID(dbus_message_iter_get_basic, (DBusMessageIter *iter, void *value), (iter, value)) \
    RETURNING(dbus_bool_t, dbus_message_iter_next, (DBusMessageIter *iter), (iter))

#define NOTTY_DBUS_POINTER(type, name, parameters, arguments) type (*name) parameters;
#define NOTTY_DBUS_VOID_POINTER(name, parameters, arguments) void (*name) parameters;
/// The functions of the loaded library (filled by notty_dbus_load).
struct notty_dbus_functions {
    NOTTY_DBUS_FUNCTIONS(NOTTY_DBUS_POINTER, NOTTY_DBUS_VOID_POINTER)
};
extern struct notty_dbus_functions notty_dbus_table;

#define NOTTY_DBUS_WRAPPER(type, name, parameters, arguments) \
    static inline type name parameters { return notty_dbus_table.name arguments; }
#define NOTTY_DBUS_VOID_WRAPPER(name, parameters, arguments) \
    static inline void name parameters { notty_dbus_table.name arguments; }
NOTTY_DBUS_FUNCTIONS(NOTTY_DBUS_WRAPPER, NOTTY_DBUS_VOID_WRAPPER)

/// The library's file name: the runtime package's (Debian's libdbus-1-3), not the -dev symlink.
#define NOTTY_DBUS_LIBRARY "libdbus-1.so.3"

/// Loads libdbus-1 once (later calls answer the first call's outcome). Answers 1 when every
/// function was found; 0 otherwise, with the loader's reason in `reason` (NUL-terminated).
int notty_dbus_load(char *reason, size_t size);

/// A DBusError, initialised and ready (Swift cannot call the C idiom of a local and an init).
static inline DBusError notty_dbus_error(void) {
    DBusError error;
    dbus_error_init(&error);
    return error;
}

#endif
