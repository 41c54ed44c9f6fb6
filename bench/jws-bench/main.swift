// jws-bench: what App Store JWS verification costs on this machine (run by bench/jws.sh, release build).
//
// With a minted App Store-shaped PKI (P-384 root → P-256 intermediate → P-256 leaf, Apple's marker OIDs) and a
// typical signed transaction (~2.4 KB JWS):
// 1. warm cache, 1 thread and --threads threads: the steady state (parse, one cached chain, one ECDSA verify);
// 2. cold: a verifier with its cache disabled, so every verification also validates the chain (X.509 parsing,
//    path validation at signedDate, marker OIDs);
// 3. SHA-256 of a 4 KB submission (the per-message fingerprint).
// Prints verifications/s and µs per verification (wall time × threads / count). Exits 1 if any verification fails.

import Crypto
import Foundation
import SignedData
import TestPKI

var seconds = 3.0
var threads = ProcessInfo.processInfo.activeProcessorCount
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--seconds": seconds = Double(arguments.popFirst() ?? "") ?? seconds
    case "--threads": threads = Int(arguments.popFirst() ?? "") ?? threads
    default:
        FileHandle.standardError.write(Data("usage: jws-bench [--seconds S] [--threads N]\n".utf8))
        exit(2)
    }
}

do {
    let pki = try TestSigningPKI.mint()
    let payload = Array("""
        {"transactionId":"2000000123456789","originalTransactionId":"2000000000000001","webOrderLineItemId":\
        "2000000012345678","bundleId":"com.example.app","productId":"com.example.subscription.monthly",\
        "subscriptionGroupIdentifier":"21234567","purchaseDate":\(pki.signedDateMs - 5000),"originalPurchaseDate":\
        \(pki.signedDateMs - 86_400_000),"expiresDate":\(pki.signedDateMs + 2_592_000_000),"quantity":1,\
        "type":"Auto-Renewable Subscription","inAppOwnershipType":"PURCHASED","signedDate":\(pki.signedDateMs),\
        "environment":"Production","transactionReason":"RENEWAL","storefront":"USA","storefrontId":"143441",\
        "price":9990,"currency":"USD","appTransactionId":"704289572311984576"}
        """.utf8)
    let jws = try pki.sign(payload: payload)
    print("machine: \(ProcessInfo.processInfo.activeProcessorCount) CPUs; JWS \(jws.utf8.count) bytes, payload \(payload.count) bytes")

    let warm = pki.verifier()
    _ = try warm.verify(jws)
    var results: [JWSBench.Result] = []
    for threadCount in Set([1, threads]).sorted() {
        let result = JWSBench.run(seconds: seconds, threads: threadCount) { _ = try warm.verify(jws) }
        JWSBench.report("warm cache, \(threadCount) thread\(threadCount == 1 ? "" : "s")", result)
        results.append(result)
    }
    let cold = pki.verifier(cacheCapacity: 0)
    let coldResult = JWSBench.run(seconds: seconds, threads: 1) { _ = try cold.verify(jws) }
    JWSBench.report("cold (chain validated every time), 1 thread", coldResult)
    let message = [UInt8](repeating: 0x61, count: 4096)
    let digest = JWSBench.run(seconds: seconds / 3, threads: 1) { _ = SHA256.hash(message) }
    JWSBench.report("SHA-256 of 4 KiB, 1 thread", digest)
    if (results + [coldResult, digest]).contains(where: { $0.failures > 0 }) { exit(1) }
} catch {
    FileHandle.standardError.write(Data("jws-bench: \(error)\n".utf8))
    exit(1)
}
