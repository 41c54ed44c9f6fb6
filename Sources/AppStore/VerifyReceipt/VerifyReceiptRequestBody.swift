import ServiceSupport

/// The JSON body of a verifyReceipt request, built without a general encoder: the receipt can be megabytes.
enum VerifyReceiptRequestBody {
    /// `{"receipt-data":"...","password":"..."?,"exclude-old-transactions":true?}`; `password` only when a shared
    /// secret is configured (Apple answers some receipts 21004/21003 otherwise).
    static func make(receiptData: String, sharedSecret: String?, excludeOldTransactions: Bool) -> [UInt8] {
        var body: [UInt8] = []
        body.reserveCapacity(receiptData.utf8.count + (sharedSecret?.utf8.count ?? 0) + 80)
        body.append(contentsOf: #"{"receipt-data":"#.utf8)
        appendString(receiptData, to: &body)
        if let sharedSecret {
            body.append(contentsOf: #","password":"#.utf8)
            appendString(sharedSecret, to: &body)
        }
        if excludeOldTransactions {
            body.append(contentsOf: #","exclude-old-transactions":true"#.utf8)
        }
        body.append(UInt8(ascii: "}"))
        return body
    }

    /// Base64 needs no escaping, so the common case is a plain copy; anything else goes through `JSONText`.
    private static func appendString(_ value: String, to body: inout [UInt8]) {
        var value = value
        let needsEscaping = value.withUTF8 { bytes in
            // No early exit, so the loop vectorizes: receipts are kilobytes and this runs for every request.
            var found: UInt8 = 0
            for byte in bytes {
                let isQuote: UInt8 = byte == UInt8(ascii: "\"") ? 1 : 0
                let isBackslash: UInt8 = byte == UInt8(ascii: "\\") ? 1 : 0
                found |= (byte < 0x20 ? 1 : 0) | isQuote | isBackslash
            }
            return found != 0
        }
        if needsEscaping {
            body.append(contentsOf: JSONText.quoted(value).utf8)
        } else {
            body.append(UInt8(ascii: "\""))
            body.append(contentsOf: value.utf8)
            body.append(UInt8(ascii: "\""))
        }
    }
}
