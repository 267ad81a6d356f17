import CDBus
import Foundation
import NottyDesktop
import NottyPOSIX
import Synchronization

/// freedesktop Desktop Notifications (`org.freedesktop.Notifications`, spec 1.2) on the session
/// bus through libdbus-1 (loaded at run time, see CDBus): the adapter under ``PopupBridge``. libdbus runs with its thread
/// support on: calls are sent at once from the caller's thread (a `Notify` waits for its answer
/// on a Dispatch thread), while one thread of ours reads the daemon's `NotificationClosed` and
/// `ActionInvoked` signals from the same connection and hands them to `onSignal`.
public final class DesktopBus: @unchecked Sendable {
    /// Something the daemon said about one of its popups.
    public enum Signal: Sendable, Equatable {
        case closed(popupId: UInt32, reason: UInt32)
        case action(popupId: UInt32, key: String)
    }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    private let connection: OpaquePointer
    private let running = Atomic<Bool>(true)
    /// Wakes the connection's thread from its poll(2).
    private let wakeUp: WakeUp
    private let onSignal: @Sendable (Signal) -> Void
    private var thread: Thread?
    /// The daemon's name and version (`GetServerInformation`), e.g. "dunst 1.9.0".
    public let server: String

    private static let service = "org.freedesktop.Notifications"
    private static let path = "/org/freedesktop/Notifications"

    /// Connects to the session bus (`DBUS_SESSION_BUS_ADDRESS`, or `address` when given) and
    /// asks the notification daemon who it is. Throws, with a sentence for the user, when
    /// there is no session bus or no daemon on it.
    public init(address: String? = nil, onSignal: @escaping @Sendable (Signal) -> Void) throws(Failure) {
        try Self.loadLibrary()
        dbus_threads_init_default()
        var error = notty_dbus_error()
        guard let connection = Self.connect(address: address, &error) else {
            let detail = Self.text(error)
            dbus_error_free(&error)
            throw Failure(description: "no session D-Bus (\(detail)): is DBUS_SESSION_BUS_ADDRESS set? Desktop popups are off")
        }
        dbus_connection_set_exit_on_disconnect(connection, 0)
        guard let wakeUp = WakeUp() else {
            dbus_connection_close(connection)
            dbus_connection_unref(connection)
            throw Failure(description: "cannot make a pipe: \(String(cString: strerror(errno)))")
        }
        self.wakeUp = wakeUp
        self.connection = connection
        self.onSignal = onSignal
        do {
            server = try Self.serverInformation(connection)
        } catch {
            dbus_connection_close(connection)
            dbus_connection_unref(connection)
            throw error
        }
        dbus_bus_add_match(connection, "type='signal',interface='\(Self.service)',path='\(Self.path)'", &error)
        if dbus_error_is_set(&error) != 0 {
            let detail = Self.text(error)
            dbus_error_free(&error)
            dbus_connection_close(connection)
            dbus_connection_unref(connection)
            throw Failure(description: "cannot listen to the notification daemon's signals: \(detail)")
        }
        // Signals reach onSignal through a filter as the connection dispatches (replies to our
        // own calls go to those calls: popping messages by hand would steal them).
        let filter: DBusHandleMessageFunction = { _, message, context in
            guard let message, let context else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
            let bus = Unmanaged<DesktopBus>.fromOpaque(context).takeUnretainedValue()
            guard let signal = DesktopBus.signal(message) else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
            bus.onSignal(signal)
            return DBUS_HANDLER_RESULT_HANDLED
        }
        dbus_connection_add_filter(connection, filter, Unmanaged.passUnretained(self).toOpaque(), nil)
        dbus_connection_flush(connection)
        let thread = Thread { [self] in loop() }
        thread.name = "notty-dbus"
        self.thread = thread
        thread.start()
    }

    /// What to say when libdbus-1 cannot be loaded (it is not linked: see CDBus).
    public static let missingLibrary = "desktop popups need libdbus-1 (apt install libdbus-1-3)"

    /// Loads libdbus-1.so.3 (once per process). Throws ``missingLibrary`` and the loader's
    /// reason when it is not there.
    public static func loadLibrary() throws(Failure) {
        var reason = [CChar](repeating: 0, count: 512)
        guard notty_dbus_load(&reason, reason.count) != 0 else {
            let detail = String(decoding: reason.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw Failure(description: "\(missingLibrary): \(detail)")
        }
    }

    /// A private connection to the session bus, or to the bus at `address`, registered on it.
    private static func connect(address: String?, _ error: inout DBusError) -> OpaquePointer? {
        guard let address else { return dbus_bus_get_private(DBUS_BUS_SESSION, &error) }
        guard let connection = dbus_connection_open_private(address, &error) else { return nil }
        guard dbus_bus_register(connection, &error) != 0 else {
            dbus_connection_close(connection)
            dbus_connection_unref(connection)
            return nil
        }
        return connection
    }

    /// Shows a popup (replacing popup `replacing` in place when not 0); answers its id.
    public func notify(_ content: PopupContent, replacing: UInt32 = 0) async throws(Failure) -> UInt32 {
        guard running.load(ordering: .acquiring) else { throw Failure(description: "the session D-Bus went away") }
        let result: Result<UInt32, Failure> = await onDispatch { [self] in
            let result = Result(catching: { () throws(Failure) -> UInt32 in try send(notify: content, replacing: replacing) })
            wake()  // the call may have read signals off the socket
            return result
        }
        return try result.get()
    }

    /// Closes a popup (`CloseNotification`), sent at once; the daemon answers with
    /// `NotificationClosed`, reason 3.
    public func close(_ popupId: UInt32) {
        guard running.load(ordering: .acquiring) else { return }
        sendClose(popupId)
        wake()
    }

    /// Stops reading signals; the connection closes when the last user lets go.
    public func stop() {
        running.store(false, ordering: .releasing)
        wake()
    }

    // MARK: - The connection's thread

    /// Waits in poll(2) on the bus socket and a wake-up pipe, never inside libdbus: libdbus
    /// lets one thread do I/O at a time, and a thread blocked reading would hold up every
    /// `CloseNotification` sent from another (by up to its timeout). Messages another thread's
    /// call read off the socket are dispatched when that call wakes this loop.
    private func loop() {
        var fd: Int32 = -1
        guard dbus_connection_get_unix_fd(connection, &fd) != 0 else { return }
        var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: wakeUp.descriptor, events: Int16(POLLIN), revents: 0)]
        while running.load(ordering: .acquiring) {
            _ = poll(&fds, 2, 1000)
            if fds[1].revents != 0 { wakeUp.drain() }
            guard dbus_connection_read_write_dispatch(connection, 0) != 0 else {
                running.store(false, ordering: .releasing)
                break
            }
            while dbus_connection_dispatch(connection) == DBUS_DISPATCH_DATA_REMAINS {}
        }
    }

    /// Makes the loop dispatch now (after a call that may have read signals, or to stop).
    private func wake() {
        wakeUp.signal()
    }

    deinit {
        dbus_connection_close(connection)
        dbus_connection_unref(connection)
    }

    private func send(notify content: PopupContent, replacing: UInt32) throws(Failure) -> UInt32 {
        guard let message = dbus_message_new_method_call(Self.service, Self.path, Self.service, "Notify") else {
            throw Failure(description: "out of memory")
        }
        defer { dbus_message_unref(message) }
        var args = DBusMessageIter()
        dbus_message_iter_init_append(message, &args)
        Self.append(string: content.appName, to: &args)
        Self.append(uint32: replacing, to: &args)
        Self.append(string: "", to: &args)  // app_icon
        Self.append(string: content.summary, to: &args)
        Self.append(string: content.body, to: &args)
        var actions = DBusMessageIter()
        dbus_message_iter_open_container(&args, Int32(UInt8(ascii: "a")), "s", &actions)
        for (key, label) in content.actions {
            Self.append(string: key, to: &actions)
            Self.append(string: label, to: &actions)
        }
        dbus_message_iter_close_container(&args, &actions)
        var hints = DBusMessageIter()
        dbus_message_iter_open_container(&args, Int32(UInt8(ascii: "a")), "{sv}", &hints)
        var entry = DBusMessageIter()
        dbus_message_iter_open_container(&hints, Int32(UInt8(ascii: "e")), nil, &entry)
        Self.append(string: "urgency", to: &entry)
        var variant = DBusMessageIter()
        dbus_message_iter_open_container(&entry, Int32(UInt8(ascii: "v")), "y", &variant)
        var urgency = content.urgency.rawValue
        dbus_message_iter_append_basic(&variant, Int32(UInt8(ascii: "y")), &urgency)
        dbus_message_iter_close_container(&entry, &variant)
        dbus_message_iter_close_container(&hints, &entry)
        dbus_message_iter_close_container(&args, &hints)
        var timeout = content.expireTimeout
        dbus_message_iter_append_basic(&args, Int32(UInt8(ascii: "i")), &timeout)

        var error = notty_dbus_error()
        guard let reply = dbus_connection_send_with_reply_and_block(connection, message, 5000, &error) else {
            defer { dbus_error_free(&error) }
            throw Failure(description: "the notification daemon refused a popup: \(Self.text(error))")
        }
        defer { dbus_message_unref(reply) }
        var result = DBusMessageIter()
        guard dbus_message_iter_init(reply, &result) != 0, dbus_message_iter_get_arg_type(&result) == Int32(UInt8(ascii: "u")) else {
            throw Failure(description: "the notification daemon answered Notify without an id")
        }
        var id: UInt32 = 0
        dbus_message_iter_get_basic(&result, &id)
        return id
    }

    private func sendClose(_ popupId: UInt32) {
        guard let message = dbus_message_new_method_call(Self.service, Self.path, Self.service, "CloseNotification") else { return }
        defer { dbus_message_unref(message) }
        var args = DBusMessageIter()
        dbus_message_iter_init_append(message, &args)
        Self.append(uint32: popupId, to: &args)
        dbus_message_set_no_reply(message, 1)
        dbus_connection_send(connection, message, nil)
        dbus_connection_flush(connection)
    }

    private static func serverInformation(_ connection: OpaquePointer) throws(Failure) -> String {
        guard let message = dbus_message_new_method_call(service, path, service, "GetServerInformation") else {
            throw Failure(description: "out of memory")
        }
        defer { dbus_message_unref(message) }
        var error = notty_dbus_error()
        guard let reply = dbus_connection_send_with_reply_and_block(connection, message, 3000, &error) else {
            defer { dbus_error_free(&error) }
            throw Failure(
                description:
                    "no notification daemon on the session D-Bus (\(text(error))): start one (dunst, mako, your desktop's). Desktop popups are off")
        }
        defer { dbus_message_unref(reply) }
        var iter = DBusMessageIter()
        var parts: [String] = []
        if dbus_message_iter_init(reply, &iter) != 0 {
            repeat {
                if dbus_message_iter_get_arg_type(&iter) == Int32(UInt8(ascii: "s")) {
                    var value: UnsafePointer<CChar>?
                    dbus_message_iter_get_basic(&iter, &value)
                    if let value { parts.append(String(cString: value)) }
                }
            } while dbus_message_iter_next(&iter) != 0
        }
        // name, vendor, version, spec version
        return [parts.first, parts.count > 2 ? parts[2] : nil].compactMap { $0 }.joined(separator: " ")
    }

    private static func signal(_ message: OpaquePointer) -> Signal? {
        let closed = dbus_message_is_signal(message, service, "NotificationClosed") != 0
        let action = dbus_message_is_signal(message, service, "ActionInvoked") != 0
        guard closed || action else { return nil }
        var iter = DBusMessageIter()
        guard dbus_message_iter_init(message, &iter) != 0, dbus_message_iter_get_arg_type(&iter) == Int32(UInt8(ascii: "u")) else { return nil }
        var popupId: UInt32 = 0
        dbus_message_iter_get_basic(&iter, &popupId)
        guard dbus_message_iter_next(&iter) != 0 else { return nil }
        if closed {
            guard dbus_message_iter_get_arg_type(&iter) == Int32(UInt8(ascii: "u")) else { return nil }
            var reason: UInt32 = 0
            dbus_message_iter_get_basic(&iter, &reason)
            return .closed(popupId: popupId, reason: reason)
        }
        guard dbus_message_iter_get_arg_type(&iter) == Int32(UInt8(ascii: "s")) else { return nil }
        var key: UnsafePointer<CChar>?
        dbus_message_iter_get_basic(&iter, &key)
        return .action(popupId: popupId, key: key.map { String(cString: $0) } ?? "")
    }

    private static func append(string: String, to iter: inout DBusMessageIter) {
        // D-Bus strings are valid UTF-8 without NUL: Swift strings are UTF-8; NULs are cut out.
        let clean = string.contains("\0") ? string.replacingOccurrences(of: "\0", with: "") : string
        clean.withCString { pointer in
            var value: UnsafePointer<CChar>? = pointer
            _ = dbus_message_iter_append_basic(&iter, Int32(UInt8(ascii: "s")), &value)
        }
    }

    private static func append(uint32: UInt32, to iter: inout DBusMessageIter) {
        var value = uint32
        _ = dbus_message_iter_append_basic(&iter, Int32(UInt8(ascii: "u")), &value)
    }

    private static func text(_ error: DBusError) -> String {
        error.message.map { String(cString: $0) } ?? error.name.map { String(cString: $0) } ?? "unknown error"
    }
}
