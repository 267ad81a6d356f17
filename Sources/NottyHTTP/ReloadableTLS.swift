import Foundation
import HummingbirdCore
import Logging
import NIOCore
import NIOSSL
import Synchronization

/// The service's TLS: its certificate and key read from files, and read again on SIGHUP
/// (certbot renews every 60 days) without dropping a connection: each new connection takes
/// the context current when it opens.
///
/// What it offers (testssl.sh finds nothing of MEDIUM or above but the test's self-signed
/// certificate): TLS 1.2 and 1.3 only; in TLS 1.2 one suite per key type, ECDHE with AES-128-GCM
/// (no CBC: BEAST, LUCKY13), so the server's order is the only one (NIOSSL cannot set
/// BoringSSL's server preference); TLS 1.3's own AEAD suites.
public final class ReloadableTLS: Sendable {
    public let certificatePath: String
    public let keyPath: String
    private let current: Mutex<NIOSSLContext>

    public init(certificatePath: String, keyPath: String) throws {
        self.certificatePath = certificatePath
        self.keyPath = keyPath
        current = Mutex(try Self.context(certificatePath: certificatePath, keyPath: keyPath))
    }

    static func configuration(certificatePath: String, keyPath: String) throws -> TLSConfiguration {
        let chain = try NIOSSLCertificate.fromPEMFile(certificatePath).map { NIOSSLCertificateSource.certificate($0) }
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain, privateKey: .privateKey(try NIOSSLPrivateKey(file: keyPath, format: .pem)))
        tls.minimumTLSVersion = .tlsv12
        tls.cipherSuiteValues = [.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, .TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]
        return tls
    }

    private static func context(certificatePath: String, keyPath: String) throws -> NIOSSLContext {
        try NIOSSLContext(configuration: configuration(certificatePath: certificatePath, keyPath: keyPath))
    }

    /// The context new connections take.
    var context: NIOSSLContext { current.withLock { $0 } }

    /// Reads the files again; on an error the current certificate stays (and the error says why).
    public func reload() throws {
        let fresh = try Self.context(certificatePath: certificatePath, keyPath: keyPath)
        current.withLock { $0 = fresh }
    }
}

/// A child channel that speaks TLS with ``ReloadableTLS``'s current context before `inner`.
struct ReloadableTLSChannel<Inner: ServerChildChannel>: ServerChildChannel {
    typealias Value = Inner.Value
    let inner: Inner
    let tls: ReloadableTLS

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls.context))
        }.flatMap {
            inner.setup(channel: channel, logger: logger)
        }
    }

    func handle(value: Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }
}
