import Foundation
import Glibc

/// A compact-serialized JWS as the App Store sends it (`header.payload.signature`), parsed but not verified.
///
/// Parsing is strict: exactly three non-empty base64url segments (no padding, no other characters), at most
/// `maximumLength` bytes in all (checked before anything is decoded), a header that is a JSON object whose `alg` is
/// `ES256`. `none`, `HS256`, `RS256` and every other algorithm are refused here, before any key is looked at.
public struct CompactJWS: Sendable {
    /// The largest JWS accepted (64 KiB); App Store JWS are a few KiB, notifications embedding two JWS under 16 KiB.
    public static let maximumLength = 64 * 1024

    /// The decoded protected header.
    public let header: JWSHeader
    /// The ASCII bytes the signature covers: `base64url(header) + "." + base64url(payload)`.
    public let signingInput: [UInt8]
    /// The decoded payload bytes (JSON for App Store data; not yet checked).
    public let payload: [UInt8]
    /// The decoded signature bytes (64 for a well-formed ES256 signature; checked by the verifier).
    public let signature: [UInt8]

    /// Parses `text`.
    ///
    /// - Throws: `SignedDataError` `.malformed` (shape, size, base64url, header JSON) or `.unsupportedAlgorithm`.
    public static func parse(_ text: String) throws(SignedDataError) -> CompactJWS {
        let bytes = Array(text.utf8)
        let segments = try split(bytes)
        let header = try decodeHeader(bytes[segments.0])
        guard let payload = Base64.decodeURL(bytes[segments.1]) else {
            throw SignedDataError(.malformed, "the JWS payload segment is not base64url")
        }
        guard let signature = Base64.decodeURL(bytes[segments.2]) else {
            throw SignedDataError(.malformed, "the JWS signature segment is not base64url")
        }
        return CompactJWS(header: header, signingInput: Array(bytes[segments.0.lowerBound..<segments.1.upperBound]),
                          payload: payload, signature: signature)
    }

    /// A cheap shape check for the HTTP ingest, without verifying anything: three base64url segments within the
    /// size limit and a header that decodes to a JSON object with `alg` `ES256`.
    @_spi(Testing) public static func looksLikeES256(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard let segments = try? split(bytes) else { return false }
        return (try? decodeHeader(bytes[segments.0])) != nil
            && Base64.decodeURL(bytes[segments.1]) != nil && Base64.decodeURL(bytes[segments.2]) != nil
    }

    /// The payload bytes of a JWS of the right shape, NOT verified: for routing and keying only (the ingest keys a
    /// notification by its unverified content). Never credit, refund or trust anything read from them.
    ///
    /// - Throws: the same errors as `parse`.
    @_spi(Testing) public static func unverifiedPayload(_ text: String) throws(SignedDataError) -> [UInt8] {
        try parse(text).payload
    }

    /// The three segments' ranges in `bytes`, checking the size limit and the shape.
    static func split(_ bytes: [UInt8]) throws(SignedDataError) -> (Range<Int>, Range<Int>, Range<Int>) {
        guard bytes.count <= maximumLength else {
            throw SignedDataError(.malformed, "the JWS is \(bytes.count) bytes, over the \(maximumLength)-byte limit")
        }
        // memchr: a notification's JWS is ~12 KB, and this runs three times per notification.
        var dots: [Int] = []
        bytes.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            var start = 0
            while dots.count < 3, start < buffer.count,
                let found = memchr(base + start, Int32(UInt8(ascii: ".")), buffer.count - start)
            {
                let index = base.distance(to: found.assumingMemoryBound(to: UInt8.self))
                dots.append(index)
                start = index + 1
            }
        }
        guard dots.count == 2 else {
            throw SignedDataError(.malformed, "a compact JWS has exactly three '.'-separated segments; this one has "
                                  + (dots.count > 2 ? "more" : "\(dots.count + 1)"))
        }
        let segments = (0..<dots[0], (dots[0] + 1)..<dots[1], (dots[1] + 1)..<bytes.count)
        guard !segments.0.isEmpty, !segments.1.isEmpty, !segments.2.isEmpty else {
            throw SignedDataError(.malformed, "a JWS segment is empty")
        }
        return segments
    }

    /// The header segment decoded, with `alg` checked to be ES256.
    static func decodeHeader(_ segment: ArraySlice<UInt8>) throws(SignedDataError) -> JWSHeader {
        guard let json = Base64.decodeURL(segment) else {
            throw SignedDataError(.malformed, "the JWS header segment is not base64url")
        }
        let header: JWSHeader
        do {
            header = try JSONDecoder().decode(JWSHeader.self, from: Data(json))
        } catch {
            throw SignedDataError(.malformed, "the JWS header is not a JSON object with string alg/x5c/kid/typ")
        }
        guard let alg = header.alg else {
            throw SignedDataError(.unsupportedAlgorithm, "the JWS header has no 'alg'; only ES256 is accepted")
        }
        guard alg == "ES256" else {
            let shown = alg.count <= 16 ? alg : String(alg.prefix(16)) + "..."
            throw SignedDataError(.unsupportedAlgorithm, "the JWS algorithm is '\(shown)'; only ES256 is accepted")
        }
        return header
    }
}
