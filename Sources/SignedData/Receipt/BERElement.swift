/// One BER/DER element located in a byte buffer (content and end are indexes into that buffer).
struct BERElement {
    /// 0 universal, 1 application, 2 context-specific, 3 private.
    let tagClass: UInt8
    let isConstructed: Bool
    let tagNumber: UInt32
    /// The content octets (for an indefinite length: up to, not including, the end-of-contents octets).
    let content: Range<Int>
    /// Index just after the element (after its end-of-contents octets for an indefinite length).
    let end: Int
    /// Nesting depth from the outermost element (0).
    let depth: Int

    func isUniversal(_ number: UInt32) -> Bool { tagClass == 0 && tagNumber == number }
    func isContextSpecific(_ number: UInt32) -> Bool { tagClass == 2 && tagNumber == number }

    static let integer: UInt32 = 2
    static let octetString: UInt32 = 4
    static let objectIdentifier: UInt32 = 6
    static let utf8String: UInt32 = 12
    static let sequence: UInt32 = 16
    static let set: UInt32 = 17
    static let printableString: UInt32 = 19
    static let ia5String: UInt32 = 22
}
