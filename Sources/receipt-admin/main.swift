// receipt-admin: support and operations calls to the App Store Server API (Look Up Order ID, subscription
// statuses, refund history, app account tokens, renewal extensions, test notifications). See Sources/Admin and
// docs/OPERATIONS.md.

import Admin
import Foundation

exit(
    await AdminTool.run(
        arguments: Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment))
