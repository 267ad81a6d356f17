// libdbus-1 for Swift (Debian libdbus-1-dev). The variadic dbus_message_append_args does not
// import: messages are built with DBusMessageIter. DBUS_TYPE_* are int-cast macros, which do
// not import either: the type codes are written as characters in Swift.
#include <dbus/dbus.h>

/// A DBusError on the heap's twin: initialised and ready (Swift cannot call the macro form).
static inline DBusError notty_dbus_error(void) {
    DBusError error;
    dbus_error_init(&error);
    return error;
}
