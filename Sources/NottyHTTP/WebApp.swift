import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The web inbox's files (PROTOCOL.md §14; `Resources/web`, embedded by `scripts/web-embed`):
/// `/` and `/sw.js` (the service worker's scope is the whole site), the rest under `/web/`.
/// Each answer has an `ETag` (`304` when the browser has it); the page names the files it loads
/// with their hash (`/web/app.js?v=…`), which are then kept a year; everything else is asked
/// again. A strict Content-Security-Policy: nothing but this service's own files, no inline
/// script or style.
enum WebApp {
    struct Asset: Sendable {
        let contentType: String
        let body: ByteBuffer
        let hash: String
    }

    static let contentSecurityPolicy =
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; manifest-src 'self'; worker-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"

    static let assets: [String: Asset] = {
        var decoded: [String: Data] = [:]
        for (name, text) in webAppFiles { decoded[name] = Data(base64Encoded: text) ?? Data() }
        func hash(_ data: Data) -> String { SHA256.hash(data: data).prefix(8).map { String(format: "%02x", $0) }.joined() }
        // The page names each file it loads with its hash, so that a new build's are fetched anew;
        // but a `modulepreload` keeps the plain URL its module is imported by (`./api.js`), or
        // the module would be fetched twice.
        if let page = decoded["index.html"].map({ String(decoding: $0, as: UTF8.self) }) {
            let lines = page.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
                guard !line.contains("modulepreload") else { return String(line) }
                var line = String(line)
                for (name, data) in decoded where name != "index.html" {
                    line = line.replacingOccurrences(of: "\"/web/\(name)\"", with: "\"/web/\(name)?v=\(hash(data))\"")
                }
                return line
            }
            decoded["index.html"] = Data(lines.joined(separator: "\n").utf8)
        }
        var assets: [String: Asset] = [:]
        for (name, data) in decoded {
            assets[name] = Asset(contentType: contentType(name), body: ByteBuffer(bytes: data), hash: hash(data))
        }
        return assets
    }()

    static func contentType(_ name: String) -> String {
        switch (name as NSString).pathExtension {
        case "html": "text/html; charset=utf-8"
        case "js": "text/javascript; charset=utf-8"
        case "css": "text/css; charset=utf-8"
        case "webmanifest": "application/manifest+json"
        case "png": "image/png"
        default: "application/octet-stream"
        }
    }

    static func answer(_ name: String, request: Request) -> Response {
        guard let asset = assets[name] else {
            return Response(
                status: .notFound, headers: [.contentType: "text/plain; charset=utf-8"], body: .init(byteBuffer: ByteBuffer(string: "no such file\n"))
            )
        }
        var headers = HTTPFields()
        let etag = "\"\(asset.hash)\""
        headers[.eTag] = etag
        headers[.contentType] = asset.contentType
        headers[.contentSecurityPolicy] = contentSecurityPolicy
        headers[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
        headers[HTTPField.Name("Referrer-Policy")!] = "no-referrer"
        let versioned = request.uri.queryParameters.get("v") == asset.hash
        headers[.cacheControl] = versioned ? "public, max-age=31536000, immutable" : "no-cache"
        if request.headers[.ifNoneMatch]?.split(separator: ",").contains(where: { $0.trimmingCharacters(in: .whitespaces) == etag }) == true {
            return Response(status: .notModified, headers: headers)
        }
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: asset.body))
    }
}

extension Routes {
    var webAppRoutes: [Route] {
        [
            Route(method: .get, path: "/", audience: .anyone) { request, _ in WebApp.answer("index.html", request: request) },
            Route(method: .get, path: "/sw.js", audience: .anyone) { request, _ in WebApp.answer("sw.js", request: request) },
            Route(method: .get, path: "/web/:file", audience: .anyone) { request, context in
                WebApp.answer(try context.pathParameter("file"), request: request)
            },
        ]
    }
}
