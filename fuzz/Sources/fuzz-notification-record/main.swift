import FuzzSupport
import NotificationFuzzSupport

// A NOTIFICATIONS_TOPIC record (anyone who can produce to the topic writes one) through the verifier's notification
// processing: record decoding, the JWS chain and signature against the trusted roots, bundle, environment and app
// checks, the event mapping and the money rules. Seeds: Apple's mock TEST notification and notifications the fake
// App Store signed with the fixed PKI in fuzz/fixtures/notification-pki. Properties: see NotificationHarness.check.
@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    NotificationHarness.check(FuzzDriver.bytes(data, size))
    return 0
}

FuzzDriver.run(testOneInput)
